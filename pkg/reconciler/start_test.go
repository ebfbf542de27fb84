package reconciler_test

import (
	"context"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestStartedWriteLandsBeforeTheNext: a status write begun with Start is
// stored once settled, leaves the object in memory as it was, and the
// skeleton's last write follows it.
func TestStartedWriteLandsBeforeTheNext(t *testing.T) {
	obj := newObject(t, nil)
	_, err := skeleton(nil).Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			reconciler.Progressing(o, "Fetching manifests")
			rv := o.ResourceVersion
			p.Start(ctx, func(err error) { t.Errorf("started write failed: %v", err) })
			p.Settle()
			if o.ResourceVersion != rv {
				t.Errorf("resourceVersion %s after a started write, want %s as before", o.ResourceVersion, rv)
			}
			if rc := apimeta.FindStatusCondition(get(t, obj).Status.Conditions, meta.ReconcilingCondition); rc == nil || rc.Message != "Fetching manifests" {
				t.Errorf("stored Reconciling %+v, want \"Fetching manifests\"", rc)
			}
			reconciler.Progressing(o, "Building manifests")
			p.Start(ctx, func(err error) { t.Errorf("started write failed: %v", err) })
			reconciler.Summarize(o, nil, meta.SucceededReason, "done")
			return ctrl.Result{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	got := get(t, obj)
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition) ||
		apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition) != nil {
		t.Errorf("conditions %+v, want the last write's: Ready=True, no Reconciling", got.Status.Conditions)
	}
}

// TestFailedStartedWriteGoesWithTheNext: a started write that fails is
// reported when settled, and its changes are written by the next write.
func TestFailedStartedWriteGoesWithTheNext(t *testing.T) {
	obj := newObject(t, nil)
	_, err := skeleton(nil).Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			o.Status.LastAttemptedRevision = "main@sha1:1"
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			var failed error
			p.Start(cancelled, func(err error) { failed = err })
			p.Settle()
			if failed == nil {
				t.Error("a write with a cancelled context was not reported as failed")
			}
			return ctrl.Result{}, p.Finish(ctx)
		})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, obj).Status.LastAttemptedRevision; got != "main@sha1:1" {
		t.Errorf("lastAttemptedRevision %q, want the failed write's main@sha1:1", got)
	}
}
