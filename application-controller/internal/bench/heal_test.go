package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// healEdits is how many objects the self-heal measure edits, one at a time.
const healEdits = 10

// selfHeal edits one Git-declared key of a ConfigMap of healEdits
// Applications spread over the n, one at a time, and returns for each the
// time from the edit's answer until an informer sees the key restored
// (what `kubectl edit` then `kubectl get -w` shows a user), sorted.
func selfHeal(b *testing.B, n int, dest string) []time.Duration {
	ctx := context.Background()
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
	slices.Sort(out)
	return out
}
