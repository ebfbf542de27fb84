package controller

import (
	"context"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// chartIndex indexes HelmReleases by the chart source they are built from,
// as HelmChartReference.String() (`<kind>/<ns>/<name>`): chartRef, else the
// object spec.chart generates.
const chartIndex = ".helmChart"

// SetupWithManager registers the reconciler with the work-queue options
// opts (controllerkit.Options.ControllerOptions); it also reconciles the
// HelmReleases of a HelmChart or OCIRepository whose artifact changed.
// Flux compatible.
func (r *HelmReleaseReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &helmv2.HelmRelease{}, chartIndex,
		func(obj client.Object) []string {
			hr := obj.(*helmv2.HelmRelease)
			if ref := hr.GetHelmChartReference(); ref != nil {
				return []string{ref.String()}
			}
			if ref := hr.GetHelmChartTemplateReference(); ref != nil {
				return []string{ref.String()}
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
	b := ctrl.NewControllerManagedBy(mgr).
		For(&helmv2.HelmRelease{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		Watches(&helmv2.HelmRelease{}, cancelOnGeneration).
		Watches(&sourcev1.HelmChart{}, handler.Funcs{UpdateFunc: r.chartChanged(sourcev1.HelmChartKind)}).
		Watches(&sourcev1.OCIRepository{}, handler.Funcs{UpdateFunc: r.chartChanged(sourcev1.OCIRepositoryKind)})
	if r.AllowExternalArtifact {
		// Only with the gate on, as Flux: the kind's CRD may not be installed.
		b = b.Watches(&sourcev1.ExternalArtifact{}, handler.Funcs{UpdateFunc: r.chartChanged(sourcev1.ExternalArtifactKind)})
	}
	return b.WithOptions(opts).Complete(r)
}

// chartChanged queues the HelmReleases of a chart source of kind whose
// artifact changed (revision or digest: Flux's
// SourceRevisionChangePredicate) or, beyond Flux, whose
// status.observedGeneration moved: a changed chart template that
// source-controller refused (Stalled, the old artifact kept) or built into
// the same artifact is seen at once, not at the HelmRelease's next
// --requeue-dependency retry. A new artifact revision also ends their
// running waits (HealthCheckCanceled).
func (r *HelmReleaseReconciler) chartChanged(kind string) func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[ctrl.Request]) {
	return func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		o, ok1 := e.ObjectOld.(conditionedObject)
		n, ok2 := e.ObjectNew.(conditionedObject)
		if !ok1 || !ok2 {
			return
		}
		oa, na := controllerkit.ArtifactOf(o), controllerkit.ArtifactOf(n)
		artifactChanged := na != nil && (oa == nil || oa.Revision != na.Revision || oa.Digest != na.Digest)
		if !artifactChanged && o.GetObservedGeneration() == n.GetObservedGeneration() {
			return
		}
		newRevision := oa != nil && na != nil && oa.Revision != na.Revision
		ref := helmv2.HelmChartReference{Kind: kind, Namespace: n.GetNamespace(), Name: n.GetName()}
		list := &helmv2.HelmReleaseList{}
		if err := r.List(ctx, list, client.MatchingFields{chartIndex: ref.String()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the HelmReleases of a changed chart source", "object", ref.String())
			return
		}
		for _, hr := range list.Items {
			if newRevision {
				r.waits.cancel(hr.UID, kind, n.GetNamespace(), n.GetName())
			}
			q.Add(ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&hr)})
		}
	}
}
