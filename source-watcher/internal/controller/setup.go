package controller

import (
	"context"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// sourceIndex indexes ArtifactGenerators by "<kind>/<namespace>/<name>" of
// each source they read.
const sourceIndex = ".spec.sources"

// SetupWithManager registers the reconciler: ArtifactGenerators on spec
// changes and reconcile requests, the five source kinds when their
// artifact changes, and the generated ExternalArtifacts (an edit or a
// deletion of one is drift, put right at once).
func (r *ArtifactGeneratorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &swv1.ArtifactGenerator{}, sourceIndex, func(o client.Object) []string {
		ag := o.(*swv1.ArtifactGenerator)
		var keys []string
		for _, s := range ag.Spec.Sources {
			k := sourceKey(ag, s)
			keys = append(keys, s.Kind+"/"+k.Namespace+"/"+k.Name)
		}
		return keys
	}); err != nil {
		return err
	}
	readers := func(kind string) handler.EventHandler {
		return controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &swv1.ArtifactGeneratorList{} },
			func(src client.Object) []client.ListOption {
				return []client.ListOption{client.MatchingFields{sourceIndex: kind + "/" + src.GetNamespace() + "/" + src.GetName()}}
			})
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&swv1.ArtifactGenerator{}, builder.WithPredicates(controllerkit.ReconcileOnChange()))
	for _, kind := range []string{sourcev1.GitRepositoryKind, sourcev1.OCIRepositoryKind, sourcev1.BucketKind,
		sourcev1.HelmChartKind, sourcev1.ExternalArtifactKind} {
		b = b.Watches(newSource(kind).(client.Object), readers(kind), builder.WithPredicates(controllerkit.ArtifactChanged{}))
	}
	// The generated ExternalArtifacts, back to their generator by sourceRef.
	generated := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
		ea, ok := o.(*sourcev1.ExternalArtifact)
		if !ok || ea.Spec.SourceRef == nil || ea.Spec.SourceRef.Kind != swv1.ArtifactGeneratorKind ||
			ea.Labels[swv1.GeneratorLabel] == "" {
			return nil
		}
		ns := ea.Spec.SourceRef.Namespace
		if ns == "" {
			ns = ea.Namespace
		}
		return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: ea.Spec.SourceRef.Name}}}
	})
	b = b.Watches(&sourcev1.ExternalArtifact{}, generated, builder.WithPredicates(predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
	}))
	return b.WithOptions(opts).Named("artifactgenerator").Complete(r)
}
