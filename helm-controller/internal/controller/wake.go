package controller

import (
	"context"
	"sync"

	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// watchSettling watches, by name, each of targets still pending after the
// wait's first round and sends on wake (without blocking) when one is seen
// Current or Failed, so that the wait's next round reads it at once rather
// than up to a poll interval later: most of a release's time at scale was
// that interval. The rounds' reads still decide the outcome; a watch that
// cannot be opened (no watch permission, say) leaves its object to the
// poll. The returned stop ends the watches.
func (k *kstatusKube) watchSettling(ctx context.Context, targets []ssa.ObjMeta, pending map[ssa.ObjMeta]bool,
	gvr func(ssa.ObjMeta) schema.GroupVersionResource, wake chan<- struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, t := range targets {
		if !pending[t] {
			continue
		}
		var ri dynamic.ResourceInterface = k.dyn.Resource(gvr(t))
		if t.Namespace != "" {
			ri = k.dyn.Resource(gvr(t)).Namespace(t.Namespace)
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", t.Name).String()})
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if settled(ev.Object) {
						select {
						case wake <- struct{}{}:
						default:
						}
					}
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// settled tells whether a watched object's kstatus status is Current or
// Failed.
func settled(obj any) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	res, err := health.Compute(u)
	return err == nil && (res.Status == status.CurrentStatus || res.Status == status.FailedStatus)
}
