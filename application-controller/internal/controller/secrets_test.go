package controller

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestFailedTaskMessageMasksTheRenderedSecretValues: an API server that
// refuses a Secret quoting its values (JSON-escaped, base64, a multi-line
// value line by line) leaves none of them in the task's result or the
// operation's message; each reads as secretMask, and the rest of the
// message is kept.
func TestFailedTaskMessageMasksTheRenderedSecretValues(t *testing.T) {
	const password = `pa"ss\word`
	const key = "-----BEGIN KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQ\n-----END KEY-----"
	token := base64.StdEncoding.EncodeToString([]byte("t0ken-value"))
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "ns"},
		"stringData": map[string]any{"password": password, "key": key},
		"data":       map[string]any{"token": token}}}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	refusal := "Secret \"db\" is invalid: [stringData.password: Invalid value: " + quote(password) +
		", data.token: Invalid value: \"" + token + "\", data.token: decoded \"t0ken-value\"" +
		", key:\n  MIIBVQIBADANBgkqhkiG9w0BAQ]"

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return apierrors.NewBadRequest(refusal)
		},
	}).Build()
	r := &ApplicationReconciler{Client: cl, APIReader: cl, Log: logr.Discard(), waves: &waveGate{},
		SSA: &ssa.Manager{Client: cl, Owner: FieldManager, KeepManagers: true}}
	src := argov1.ApplicationSource{RepoURL: "https://example.com/repo.git", Path: "app"}
	app := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "a"},
		Spec: argov1.ApplicationSpec{Source: &src}}
	st := &argov1.OperationState{Operation: argov1.Operation{Sync: &argov1.SyncOperation{}}, Phase: argov1.OperationRunning,
		StartedAt: metav1.Now()}
	k := plan.Key("", "Secret", "ns", "db")
	c := &comparison{target: &target{revisions: []string{"abc"}, sources: []argov1.ApplicationSource{src}},
		project: &argov1.AppProject{}, desired: map[string]*unstructured.Unstructured{k: secret},
		live: map[string]*unstructured.Unstructured{}, status: map[string]string{k: argov1.SyncStatusOutOfSync}}

	out := r.syncPass(context.Background(), app, st, c)
	if out.phase != argov1.OperationFailed {
		t.Fatalf("sync: %s %q, want Failed", out.phase, out.message)
	}
	if len(st.SyncResult.Resources) != 1 {
		t.Fatalf("results: %d, want the Secret's", len(st.SyncResult.Resources))
	}
	got := st.SyncResult.Resources[0].Message
	for _, leak := range []string{password, `pa\"ss\\word`, "t0ken-value", token, "MIIBVQIBADANBgkqhkiG9w0BAQ"} {
		if strings.Contains(got, leak) || strings.Contains(out.message, leak) {
			t.Errorf("%q stayed in the message:\n result %s\n operation %s", leak, got, out.message)
		}
	}
	want := `Secret/ns/db dry-run failed: Secret "db" is invalid: [stringData.password: Invalid value: "++++++++", ` +
		`data.token: Invalid value: "++++++++", data.token: decoded "++++++++", key:` + "\n  ++++++++]"
	if got != want {
		t.Errorf("result message\n got %s\nwant %s", got, want)
	}
}
