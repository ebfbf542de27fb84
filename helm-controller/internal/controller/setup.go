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
	// A new generation of a HelmRelease ends a running wait of its release
	// (HealthCheckCanceled); the same event queues the reconcile that follows.
	cancelOnGeneration := handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		if e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() {
			r.waits.cancel(e.ObjectNew.GetUID(), helmv2.HelmReleaseKind, e.ObjectNew.GetNamespace(), e.ObjectNew.GetName())
		}
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&helmv2.HelmRelease{}, builder.WithPredicates(eddyruntime.ReconcileOnChange())).
		Watches(&helmv2.HelmRelease{}, cancelOnGeneration).
		Watches(&sourcev1.HelmChart{}, handler.Funcs{UpdateFunc: r.chartChanged}).
		WithOptions(opts).
		Complete(r)
}

// chartChanged queues the HelmReleases of a HelmChart whose artifact
// changed (eddyruntime.ArtifactChanged: Flux's SourceRevisionChangePredicate)
// or, beyond Flux, whose status.observedGeneration moved: a changed chart
// template that source-controller refused (Stalled, the old artifact kept)
// or built into the same artifact is seen at once, not at the HelmRelease's
// next --requeue-dependency retry. A new artifact revision also ends their
// running waits (HealthCheckCanceled).
func (r *HelmReleaseReconciler) chartChanged(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
	o, ok1 := e.ObjectOld.(*sourcev1.HelmChart)
	n, ok2 := e.ObjectNew.(*sourcev1.HelmChart)
	if !ok1 || !ok2 || !(eddyruntime.ArtifactChanged{}).Update(e) && o.Status.ObservedGeneration == n.Status.ObservedGeneration {
		return
	}
	newRevision := o.Status.Artifact != nil && n.Status.Artifact != nil && o.Status.Artifact.Revision != n.Status.Artifact.Revision
	list := &helmv2.HelmReleaseList{}
	if err := r.List(ctx, list, client.MatchingFields{chartIndex: n.Namespace + "/" + n.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the HelmReleases of a changed HelmChart", "object", n.Namespace+"/"+n.Name)
		return
	}
	for _, hr := range list.Items {
		if newRevision {
			r.waits.cancel(hr.UID, sourcev1.HelmChartKind, n.Namespace, n.Name)
		}
		q.Add(ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&hr)})
	}
}
