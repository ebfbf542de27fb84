package controller

import (
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHealthCheckClusterScopedWithoutNamespace (adversarial review of
// issue #11): spec.healthChecks naming a cluster-scoped object without a
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
