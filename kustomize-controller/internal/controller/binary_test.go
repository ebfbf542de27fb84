package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// binaryNS holds the Kustomizations (and their sources) that the built
// kustomize-controller binary reconciles, started by startBinary with
// --watch-all-namespaces=false; the in-process reconciler leaves them
// alone. The objects they apply may be anywhere.
const binaryNS = "kc-binary"

// startBinary builds kustomize-controller, runs it on binaryNS until the
// test ends and returns binaryNS.
func startBinary(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: binaryNS}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	work := t.TempDir()
	exe, err := testenv.BuildController("kustomize-controller", work)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNTIME_NAMESPACE", binaryNS)
	p, err := testenv.StartController(env, exe, filepath.Join(work, "kustomize-controller.log"),
		"--watch-all-namespaces=false", "--min-retry-delay=200ms", "--max-retry-delay=2s", "--requeue-dependency=1s", "--log-level=debug")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(p.LogPath)
			t.Logf("kustomize-controller log:\n%s", b)
		}
	})
	return binaryNS
}

func headlessService(ns, name, spec string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec: {" + spec + "selector: {app: db}, ports: [{port: 5432}]}\n"
}

// TestBinaryRemovedFieldsKeptByServer runs the built binary through issue
// #10's inputs: a Service losing `clusterIP: None` (kept by the API server)
// fails without force, naming the Service and the field, and is replaced
// with force; a Service losing `type: ClusterIP` and `sessionAffinity: None`
// (defaults) is configured in place; a key removed from Git is reported
// removed; an object created with `kubectl apply` and adopted is not drift.
func TestBinaryRemovedFieldsKeptByServer(t *testing.T) {
	ctx := context.Background()
	ksNS := startBinary(t)
	ns := newNamespace(t)
	adopted := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: ns, Labels: map[string]string{"app": "shop"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap"}`}},
		Data: map[string]string{"A": "1"}}
	if err := env.Client.Create(ctx, adopted, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	adoptedYAML := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: adopted, namespace: " + ns + ", labels: {app: shop}}\ndata: {A: \"1\"}\n"
	r := newRepo(t, map[string]string{
		"db.yaml":      headlessService(ns, "db", "clusterIP: None, "),
		"typed.yaml":   headlessService(ns, "typed", "type: ClusterIP, sessionAffinity: None, "),
		"cfg.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: " + ns + "}\ndata: {A: \"1\", OLD: x}\n",
		"adopted.yaml": adoptedYAML,
	})
	src := newSource(t, ksNS, ns, r)
	k := newKustomization(t, ksNS, ns, ns, nil)
	waitApplied(t, k, src.Status.Artifact.Revision)
	if evs := kubeEvents(t, ksNS, k.Name, "DriftCorrected"); len(evs) != 0 {
		t.Errorf("adopting an object created by kubectl apply reported drift: %q", evs)
	}
	db, typed := &corev1.Service{}, &corev1.Service{}
	for name, svc := range map[string]*corev1.Service{"db": db, "typed": typed} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatal(err)
		}
	}

	rev := push(t, r, src, map[string]string{
		"db.yaml":    headlessService(ns, "db", ""),
		"typed.yaml": headlessService(ns, "typed", ""),
		"cfg.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: " + ns + "}\ndata: {A: \"1\"}\n",
	}, "db is no longer headless; typed and cfg lose a field")
	c := waitFailed(t, k, meta.ReconciliationFailedReason)
	if k.Status.LastAttemptedRevision != rev || !strings.Contains(c.Message, "Service/"+ns+"/db") ||
		!strings.Contains(c.Message, ".spec.clusterIP") || !strings.Contains(c.Message, "force") || strings.Contains(c.Message, "typed") {
		t.Errorf("without force: %q, want a failure naming Service/%s/db, .spec.clusterIP and force, and not typed", c.Message, ns)
	}
	if got := clusterIP(t, ns, "db"); got != "None" {
		t.Errorf("without force the Service changed: clusterIP %q", got)
	}

	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.Force = true
	if err := env.Client.Patch(ctx, k, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, k, rev)
	after := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID == db.UID || after.Spec.ClusterIP == "None" || after.Spec.ClusterIP == "" {
		t.Errorf("with force: uid %s → %s, clusterIP %q; want the Service recreated with a cluster IP", db.UID, after.UID, after.Spec.ClusterIP)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "typed"}, after); err != nil || after.UID != typed.UID {
		t.Errorf("Service typed was recreated (%v): removing a default needs no replace", err)
	}
	progress := strings.Join(kubeEvents(t, ksNS, k.Name, "Progressing"), "\n")
	if !strings.Contains(progress, "Service/"+ns+"/db replaced") || !strings.Contains(progress, "Service/"+ns+"/typed configured") {
		t.Errorf("change set events %q, want Service/%s/db replaced and typed configured", progress, ns)
	}
	want := "ConfigMap/" + ns + "/cfg configured: .data.OLD removed"
	if evs := kubeEvents(t, ksNS, k.Name, "FieldsRemoved"); !strings.Contains(strings.Join(evs, "\n"), want) {
		t.Errorf("FieldsRemoved events %q, want %q", evs, want)
	}
	if evs := kubeEvents(t, ksNS, k.Name, "DriftCorrected"); len(evs) != 0 {
		t.Errorf("Git changes reported as drift: %q", evs)
	}
}
