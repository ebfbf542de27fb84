package bootstrap

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A GitRepository whose new generation fails (the controllers leave
// status.observedGeneration behind on failure): the timeout error names
// the Ready message, as flux's, and is printed once (by the caller).
func TestWaitReconciledTimeoutSaysWhy(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := sourcev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system", Generation: 4},
	}
	repo.Status.ObservedGeneration = 3
	repo.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: "AuthenticationFailed", Message: "invalid 'ssh' auth option: 'identity' is required", ObservedGeneration: 4}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(repo).Build()
	var out bytes.Buffer
	err := waitReconciled(context.Background(), ui.New(&out), c, &sourcev1.GitRepository{},
		client.ObjectKeyFromObject(repo), "main@sha1:abc", Options{Poll: 5 * time.Millisecond, Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "'identity' is required") {
		t.Fatalf("error %v does not name the Ready message", err)
	}
	if strings.Contains(out.String(), "✗") {
		t.Errorf("the error is printed before it is returned (main prints it again):\n%s", out.String())
	}
}
