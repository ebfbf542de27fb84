package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// healEdits is how many objects the self-heal measure edits, one at a time.
const healEdits = 10

// selfHeal waits until the controller's work queue is empty (the
// comparisons the refresh set off are done: an edit would wait behind
// them), then edits one Git-declared key of a ConfigMap of healEdits
// Applications spread over the n, one at a time, and returns for each the
// time from the edit's answer until an informer sees the key restored
// (what `kubectl edit` then `kubectl get -w` shows a user), in edit order,
// and how long the queue took to empty.
func selfHeal(b *testing.B, n int, dest, addr string) ([]time.Duration, time.Duration) {
	ctx := context.Background()
	t0 := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, phaseTimeout(n), true, func(context.Context) (bool, error) {
		return total(scrapeController(b, addr).byLabels("workqueue_depth", nil, "name")) == 0, nil
	})
	if err != nil {
		b.Fatalf("application-controller's work queue not empty after %s", phaseTimeout(n))
	}
	drained := time.Since(t0)
	fast := fastClient(b)
	var out []time.Duration
	for e := range min(healEdits, n) {
		i := e * n / min(healEdits, n)
		name := fmt.Sprintf("a%d-0", i)
		want := "value-" + name
		edited := false
		w, restored := track(b, &corev1.ConfigMap{}, dest, 1, func(cm *corev1.ConfigMap) bool {
			if cm.Name != name {
				return false
			}
			if cm.Data["key"] != want {
				edited = true // called under the tracker's lock, in watch order
				return false
			}
			return edited
		})
		patch := fmt.Appendf(nil, `{"data":{"key":"edited-%d"}}`, e)
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = dest, name
		if err := fast.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		waitAll(b, w, restored, "ConfigMap restored by self-heal", time.Minute)
		out = append(out, time.Since(t0))
	}
	return out, drained
}
