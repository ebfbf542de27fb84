package e2e

import (
	"context"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestIgnoreChangePrunes (beyond Flux): a GitRepository whose spec.ignore
// changes gets a new artifact digest at the same revision; its
// Kustomizations reconcile at once (not at their 1h interval) and prune
// what is now ignored.
func TestIgnoreChangePrunes(t *testing.T) {
	startKustomizeController(t)
	src, k := setup(t, map[string]string{
		"a.yaml": configMap("a", "  x: \"1\"\n"),
		"b.yaml": configMap("b", "  x: \"2\"\n"),
	}, nil)
	waitFor(t, k, "Ready", func() bool { return ready(k) })
	waitFor(t, src, "an artifact", func() bool { return src.Status.Artifact != nil })
	rev, digest := src.Status.Artifact.Revision, src.Status.Artifact.Digest
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("ConfigMap %s: %v", name, err)
		}
	}

	ignore := "/b.yaml\n"
	src.Spec.Ignore = &ignore
	if err := env.Client.Update(ctx, src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "a new artifact digest", func() bool {
		return src.Status.Artifact != nil && src.Status.Artifact.Digest != digest
	})
	if src.Status.Artifact.Revision != rev {
		t.Fatalf("revision changed from %s to %s without a commit", rev, src.Status.Artifact.Revision)
	}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: "b"}}
	testenv.WaitGone(t, env.Client, b, "ConfigMap b, now ignored, pruned")
	waitFor(t, k, "Ready with an inventory without b", func() bool {
		if !ready(k) || k.Status.Inventory == nil {
			return false
		}
		for _, e := range k.Status.Inventory.Entries {
			if e.ID == k.Namespace+"_b__ConfigMap" {
				return false
			}
		}
		return true
	})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: "a"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap a: %v", err)
	}
	if k.Status.LastAppliedRevision != rev {
		t.Errorf("lastAppliedRevision %s, want %s", k.Status.LastAppliedRevision, rev)
	}
}
