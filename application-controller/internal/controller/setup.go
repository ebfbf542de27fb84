package controller

import (
	"context"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/application-controller/internal/source"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Field indexes on Applications.
const (
	sourceIndex  = ".eddy.sourceObjects"
	projectIndex = ".spec.project"
)

// SetupWithManager registers the reconciler: Applications (a change other
// than status), the source objects it owns (a new artifact or Ready
// message), AppProjects (their Applications), and, as Applications render
// them, the kinds of their objects (watch.go).
func (r *ApplicationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	// A render per Application is kept: more Applications than entries
	// would render again at every comparison.
	r.renders = newRenderCache(4096)
	r.waves = &waveGate{}
	r.fetches = &fetchWait{}
	r.held = &eventHold{}
	r.stale = &staleCopies{}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &argov1.Application{}, sourceIndex, sourceObjects); err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), &argov1.Application{}, projectIndex, func(o client.Object) []string {
		return []string{o.(*argov1.Application).GetProject()}
	}); err != nil {
		return err
	}
	users := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &argov1.ApplicationList{} },
		func(src client.Object) []client.ListOption {
			return []client.ListOption{client.MatchingFields{sourceIndex: src.GetName()}}
		})
	inProject := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &argov1.ApplicationList{} },
		func(p client.Object) []client.ListOption {
			return []client.ListOption{client.MatchingFields{projectIndex: p.GetName()}}
		})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&argov1.Application{}, builder.WithPredicates(applicationChanged{})).
		Watches(&sourcev1.GitRepository{}, users, builder.WithPredicates(inNamespace, sourceChanged{})).
		Watches(&sourcev1.HelmChart{}, users, builder.WithPredicates(inNamespace, sourceChanged{})).
		Watches(&sourcev1.OCIRepository{}, users, builder.WithPredicates(inNamespace, sourceChanged{})).
		Watches(&argov1.AppProject{}, inProject, builder.WithPredicates(inNamespace)).
		WithOptions(opts).
		Build(r)
	if err != nil {
		return err
	}
	r.live = &liveWatches{watched: map[schema.GroupVersionKind]bool{}, indexed: map[schema.GroupVersionKind]bool{}, ctrl: c, cache: mgr.GetCache(),
		namespace: r.Namespace, log: mgr.GetLogger().WithName("watches")}
	return nil
}

// sourceObjects are the names of the source objects an Application uses:
// its sources' at their target revisions, and its operation's. Each is
// listed unscoped and scoped to the Application's project: which one
// Ensure uses depends on the repository Secrets, which an index cannot
// read.
func sourceObjects(o client.Object) []string {
	app := o.(*argov1.Application)
	var out []string
	add := func(s argov1.ApplicationSource, rev string) {
		out = append(out, source.ObjectName(s, rev), source.ScopedObjectName(s, rev, app.GetProject()))
	}
	for _, s := range app.GetSources() {
		add(s, "")
		if op := app.Operation; op != nil && op.Sync != nil && op.Sync.Revision != "" {
			add(s, op.Sync.Revision)
		}
	}
	if op := app.Operation; op != nil && op.Sync != nil && op.Sync.Source != nil {
		add(*op.Sync.Source, op.Sync.Revision)
	}
	return out
}

// applicationChanged passes an Application's creation and deletion, and
// updates of anything but its status: the controller's own status writes
// bump the generation (no status subresource), so generation says nothing.
type applicationChanged struct{ predicate.Funcs }

func (applicationChanged) Update(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*argov1.Application), e.ObjectNew.(*argov1.Application)
	return !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !equality.Semantic.DeepEqual(o.Operation, n.Operation) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) || !equality.Semantic.DeepEqual(o.Finalizers, n.Finalizers) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp) || operationPhase(o) != operationPhase(n)
}

func operationPhase(a *argov1.Application) string {
	if a.Status.OperationState == nil {
		return ""
	}
	return a.Status.OperationState.Phase
}

// sourceChanged passes a source object's new artifact or Ready message.
type sourceChanged struct{ predicate.Funcs }

func (sourceChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(sourcev1.Source)
	n, ok2 := e.ObjectNew.(sourcev1.Source)
	if !ok1 || !ok2 {
		return true
	}
	if !equality.Semantic.DeepEqual(o.GetArtifact(), n.GetArtifact()) {
		return true
	}
	oc, _ := e.ObjectOld.(interface{ GetConditions() []metav1.Condition })
	nc, _ := e.ObjectNew.(interface{ GetConditions() []metav1.Condition })
	return oc == nil || nc == nil || !equality.Semantic.DeepEqual(oc.GetConditions(), nc.GetConditions())
}
