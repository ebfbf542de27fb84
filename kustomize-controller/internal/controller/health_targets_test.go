package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHealthCheckClusterScopedWithoutNamespace:
// spec.healthChecks naming a cluster-scoped object without a
// namespace (here the test's own Namespace, which is Active) gets the
// Kustomization's namespace (healthTargets: nsOr). The old loop's client
// ignored it for a cluster-scoped kind; the kstatus poller keys its
// statuses by the identifier of the object it read (namespace ""), so
// waitHealthy never finds the status of the id it asked for: the check
// reads 'Unknown' until the timeout instead of passing at once.
func TestHealthCheckClusterScopedWithoutNamespace(t *testing.T) {
	ns := newNamespace(t)
	t.Cleanup(func() { deleteKustomizations(t, ns) })
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: " + ns + "\ndata: {a: b}\n"})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "cluster-scoped-check", src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
		k.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{APIVersion: "v1", Kind: "Namespace", Name: ns}}
	})
	waitFor(t, k, "Ready decided", func() bool {
		c := readyCond(k)
		return c != nil && c.Status != metav1.ConditionUnknown
	})
	if c := readyCond(k); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready=%s %s: %s; want True (Namespace/%s is Active)", c.Status, c.Reason, c.Message, ns)
	}
}

// TestRecreatedWhileWaitOfOldObjectRuns:
// the background waits are keyed by namespace/name only and are stopped
// only by Finalize or suspend. A Kustomization whose finalizer is removed
// by hand (a common unsticking step) and that is deleted while its health
// checks run leaves its wait behind; a new Kustomization of the same name
// (generation 1 again, same source revision) is then taken for the old
// one by resumeHealthCheck: healthPending, never applied, until the old
// wait's timeout (here 59m30s), whose outcome is then written to the new
// object. It must be applied as any new Kustomization.
func TestRecreatedWhileWaitOfOldObjectRuns(t *testing.T) {
	ns := newNamespace(t)
	t.Cleanup(func() { deleteKustomizations(t, ns) })
	stuck := strings.ReplaceAll(deployment(ns, 1, "\n      nodeSelector: {no-such-node: \"true\"}"), "payment-api", "stuck")
	r := newRepo(t, map[string]string{
		"stuck/deployment.yaml": stuck,
		"plain/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: " + ns + "\ndata: {a: b}\n",
	})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "again", src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Path, k.Spec.Wait = "./stuck", true
	})
	waitFor(t, k, "health checks running", func() bool { return checkingHealth(k, src.Status.Artifact.Revision) })
	ctx := context.Background()
	if err := env.Client.Patch(ctx, k, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(k), &kustomizev1.Kustomization{})), nil
	}); err != nil {
		t.Fatal(err)
	}
	k2 := newKustomization(t, ns, "again", src.Name, func(k *kustomizev1.Kustomization) { k.Spec.Path = "./plain" })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(k2), k2); err != nil {
			t.Fatal(err)
		}
		if c := readyCond(k2); c != nil && c.Status == metav1.ConditionTrue {
			break
		}
		if time.Now().After(deadline) {
			c := readyCond(k2)
			t.Fatalf("the new Kustomization is not applied after 60s: Ready %+v, conditions %+v", c, k2.Status.Conditions)
		}
		time.Sleep(500 * time.Millisecond)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "cm"}, cm); err != nil {
		t.Errorf("the new Kustomization's ConfigMap: %v (Ready=True without applying it?)", err)
	}
}

// TestInvalidHealthCheckAPIVersionStalls: a spec.healthChecks entry whose
// apiVersion is no group/version can never pass, so the Kustomization
// stalls at once with a message naming the entry, nothing applied, instead
// of waiting for a nameless object until its timeout.
func TestInvalidHealthCheckAPIVersionStalls(t *testing.T) {
	ns := newNamespace(t)
	t.Cleanup(func() { deleteKustomizations(t, ns) })
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: " + ns + "\ndata: {a: b}\n"})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "bad-apiversion", src.Name, func(k *kustomizev1.Kustomization) {
		k.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
		k.Spec.HealthChecks = []meta.NamespacedObjectKindReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
			{APIVersion: "apps/v1/extra", Kind: "Deployment", Name: "app"},
		}
	})
	waitFor(t, k, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.StalledCondition) })
	want := "Reconciliation failed terminally due to configuration error: spec.healthChecks[1] Deployment/" + ns +
		`/app: invalid apiVersion "apps/v1/extra": unexpected GroupVersion string: apps/v1/extra`
	if c := readyCond(k); c == nil || c.Status != metav1.ConditionFalse || c.Reason != meta.ReconciliationFailedReason || c.Message != want {
		t.Errorf("Ready %+v, want False %s %q", c, meta.ReconciliationFailedReason, want)
	}
	if k.Status.Inventory != nil {
		t.Errorf("inventory %v: want nothing applied", k.Status.Inventory)
	}
}
