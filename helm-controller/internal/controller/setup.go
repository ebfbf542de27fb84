package controller

import (
	"context"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	eddyruntime "github.com/eddyops/eddy/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// chartIndex indexes HelmReleases by the HelmChart they are built from
// (`<ns>/<name>`): chartRef, else the generated chart.
const chartIndex = ".helmChart"

// SetupWithManager registers the reconciler with the work-queue options
// opts (runtime.Options.ControllerOptions); it also reconciles the
// HelmReleases of a HelmChart whose artifact changed. Flux compatible.
func (r *HelmReleaseReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &helmv2.HelmRelease{}, chartIndex,
		func(obj client.Object) []string {
			hr := obj.(*helmv2.HelmRelease)
			if ref := hr.Spec.ChartRef; ref != nil && ref.Kind == sourcev1.HelmChartKind {
				ns := ref.Namespace
				if ns == "" {
					ns = hr.Namespace
				}
				return []string{ns + "/" + ref.Name}
			}
			if tpl := hr.Spec.Chart; tpl != nil {
				ns := tpl.Spec.SourceRef.Namespace
				if ns == "" {
					ns = hr.Namespace
				}
				return []string{ns + "/" + hr.Namespace + "-" + hr.Name}
			}
			return nil
		}); err != nil {
		return err
	}
	dependants := eddyruntime.EnqueueListed(r.Client, func() client.ObjectList { return &helmv2.HelmReleaseList{} },
		func(src client.Object) []client.ListOption {
			return []client.ListOption{client.MatchingFields{chartIndex: src.GetNamespace() + "/" + src.GetName()}}
		})
	// A new generation of a HelmRelease, or a new artifact of its HelmChart,
	// ends a running wait of its release (HealthCheckCanceled); the event
	// queues the reconcile that follows.
	cancelOnGeneration := handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		if e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() {
			r.waits.cancel(e.ObjectNew.GetUID(), helmv2.HelmReleaseKind, e.ObjectNew.GetNamespace(), e.ObjectNew.GetName())
		}
	}}
	cancelOnArtifact := handler.Funcs{UpdateFunc: func(ctx context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		o, ok1 := e.ObjectOld.(*sourcev1.HelmChart)
		n, ok2 := e.ObjectNew.(*sourcev1.HelmChart)
		if !ok1 || !ok2 || o.Status.Artifact == nil || n.Status.Artifact == nil || o.Status.Artifact.Revision == n.Status.Artifact.Revision {
			return
		}
		list := &helmv2.HelmReleaseList{}
		if err := r.List(ctx, list, client.MatchingFields{chartIndex: n.Namespace + "/" + n.Name}); err != nil {
			return
		}
		for _, hr := range list.Items {
			r.waits.cancel(hr.UID, sourcev1.HelmChartKind, n.Namespace, n.Name)
		}
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&helmv2.HelmRelease{}, builder.WithPredicates(eddyruntime.ReconcileOnChange())).
		Watches(&helmv2.HelmRelease{}, cancelOnGeneration).
		Watches(&sourcev1.HelmChart{}, dependants, builder.WithPredicates(chartArtifactChanged{})).
		Watches(&sourcev1.HelmChart{}, cancelOnArtifact).
		WithOptions(opts).
		Complete(r)
}

// chartArtifactChanged passes a HelmChart update whose artifact appeared or
// changed revision or digest (Flux compatible: SourceRevisionChangePredicate)
// and, beyond Flux, one whose status.observedGeneration moved: a changed
// chart template that source-controller refused (Stalled, the old artifact
// kept) or built into the same artifact is seen at once, not at the
// HelmRelease's next --requeue-dependency retry.
type chartArtifactChanged struct{ predicate.Funcs }

func (chartArtifactChanged) Create(event.CreateEvent) bool   { return false }
func (chartArtifactChanged) Delete(event.DeleteEvent) bool   { return false }
func (chartArtifactChanged) Generic(event.GenericEvent) bool { return false }

func (chartArtifactChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*sourcev1.HelmChart)
	n, ok2 := e.ObjectNew.(*sourcev1.HelmChart)
	if !ok1 || !ok2 {
		return false
	}
	if o.Status.ObservedGeneration != n.Status.ObservedGeneration {
		return true
	}
	if n.Status.Artifact == nil {
		return false
	}
	return o.Status.Artifact == nil || o.Status.Artifact.Revision != n.Status.Artifact.Revision ||
		o.Status.Artifact.Digest != n.Status.Artifact.Digest
}
