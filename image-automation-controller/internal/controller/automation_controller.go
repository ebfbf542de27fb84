package controller

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
)

// readyMessage is Ready's message after a successful run. Flux compatible.
const readyMessage = "repository up-to-date"

// UnappliedMarkersReason is the reason of the Warning event listing the
// markers a run left alone (files that are not YAML, markers naming no
// selected policy with a latest image). Eddy's: Flux skips them silently.
const UnappliedMarkersReason = "UnappliedMarkers"

// AutomationReconciler reconciles ImageUpdateAutomations: it reads the
// selected ImagePolicies' latestRef, clones the GitRepository, applies the
// Setters update, commits and pushes (see run).
type AutomationReconciler struct {
	client.Client
	// Secrets reads the GitRepository's and the signing key's Secrets,
	// uncached (Eddy watches no Secrets).
	Secrets client.Reader
	Events  *events.Recorder
	// NoCrossNamespaceRefs refuses a sourceRef in another namespace
	// (Stalled AccessDenied).
	NoCrossNamespaceRefs bool
	JitterPercent        float64
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	// batches are the policy changes waiting out spec.policyChangeDelay:
	// by automation, when the first change not yet written was seen.
	mu      sync.Mutex
	batches map[types.NamespacedName]time.Time
}

// SetupWithManager registers the reconciler: ImageUpdateAutomations on a
// new generation or a reconcile request; GitRepositories on a new
// generation only (not on new commits: the automation's interval or a
// policy change finds those), enqueueing the automations naming them; and
// ImagePolicies whose latestRef changed, enqueueing every automation of
// their namespace. Flux compatible.
func (r *AutomationReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	bySource := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list imagev1.ImageUpdateAutomationList
		if err := r.List(ctx, &list); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, a := range list.Items {
			ns := a.Spec.SourceRef.Namespace
			if ns == "" {
				ns = a.Namespace
			}
			if a.Spec.SourceRef.Name == obj.GetName() && ns == obj.GetNamespace() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&a)})
			}
		}
		return reqs
	})
	inNamespace := controllerkit.EnqueueListed(r.Client,
		func() client.ObjectList { return &imagev1.ImageUpdateAutomationList{} },
		func(obj client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(obj.GetNamespace())}
		})
	return ctrl.NewControllerManagedBy(mgr).
		For(&imagev1.ImageUpdateAutomation{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		Watches(&sourcev1.GitRepository{}, bySource, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&imagev1.ImagePolicy{}, inNamespace, builder.WithPredicates(latestRefChanged{})).
		WithOptions(opts).
		Complete(r)
}

// latestRefChanged passes ImagePolicies whose status.latestRef appeared,
// changed or went, and deleted policies.
type latestRefChanged struct{ predicate.Funcs }

func (latestRefChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*imagev1.ImagePolicy)
	n, ok2 := e.ObjectNew.(*imagev1.ImagePolicy)
	if !ok1 || !ok2 {
		return false
	}
	a, b := o.Status.LatestRef, n.Status.LatestRef
	return (a == nil) != (b == nil) || (a != nil && *a != *b)
}

func (latestRefChanged) Create(e event.CreateEvent) bool {
	p, ok := e.Object.(*imagev1.ImagePolicy)
	return ok && p.Status.LatestRef != nil
}

// Reconcile runs one automation. The skeleton (pkg/reconciler) adds Flux's
// finalizer, records a suspended automation's observation and writes the
// status last.
func (r *AutomationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := reconciler.Skeleton[*imagev1.ImageUpdateAutomation]{
		Client: r.Client, Kind: imagev1.ImageUpdateAutomationKind, FieldOwner: ControllerName,
		Finalizer: imagev1.ImageFinalizer,
		Suspended: func(obj *imagev1.ImageUpdateAutomation) bool { return obj.Spec.Suspend },
		Gone:      r.forget,
	}
	return skel.Reconcile(ctx, req, &imagev1.ImageUpdateAutomation{}, r.run)
}

func (r *AutomationReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *AutomationReconciler) forget(key client.ObjectKey) {
	r.mu.Lock()
	delete(r.batches, key)
	r.mu.Unlock()
}

// run is one reconcile of a live automation: the Git work (automate), then
// the conditions, the status and the events.
func (r *AutomationReconciler) run(ctx context.Context, obj *imagev1.ImageUpdateAutomation, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	if obj.Generation != obj.Status.ObservedGeneration {
		reconciler.Progressing(obj, fmt.Sprintf("processing object: new generation %d -> %d", obj.Status.ObservedGeneration, obj.Generation))
		if err := p.Patch(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	out, f := r.automate(ctx, obj)
	if out.wait > 0 && f == nil {
		// Batching: nothing written yet; Ready keeps what it said.
		if err := p.Finish(ctx); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: out.wait}, nil
	}
	if f == nil {
		obj.Status.LastAutomationRunTime = &metav1.Time{Time: r.now()}
	}
	reconciler.Summarize(obj, f, meta.SucceededReason, readyMessage)
	if err := p.Finish(ctx); err != nil {
		return ctrl.Result{}, err
	}
	r.notify(obj, wasReady, out, f)
	if f != nil {
		return ctrl.Result{}, f
	}
	return ctrl.Result{RequeueAfter: controllerkit.Jitter(obj.GetRequeueAfter(), r.JitterPercent)}, nil
}

// notify emits the run's event: the push (Normal, with the commit
// message), a failure (Warning), a recovery (Normal), or a Trace event
// when nothing changed. Flux compatible messages.
func (r *AutomationReconciler) notify(obj *imagev1.ImageUpdateAutomation, wasReady bool, out outcome, f *reconciler.Failure) {
	if out.unapplied != "" {
		r.Events.Event(obj, corev1.EventTypeWarning, UnappliedMarkersReason, out.unapplied, nil)
	}
	switch {
	case f != nil:
		r.Events.Event(obj, corev1.EventTypeWarning, f.Reason, f.EventMessage(), nil)
	case out.pushed != "":
		r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, out.pushed, nil)
	case !wasReady:
		r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, readyMessage, nil)
	case out.skipped:
		r.Events.Event(obj, events.EventTypeTrace, meta.SucceededReason, "no change since last reconciliation", nil)
	default:
		r.Events.Event(obj, events.EventTypeTrace, meta.SucceededReason, readyMessage, nil)
	}
}

// batchWait applies spec.policyChangeDelay: for an automation whose
// policies changed since the last run, the time still to wait before the
// run that writes them (0: run now). The first change starts the wait;
// changes seen during it land in the same run. In memory: a restart
// starts the wait again.
func (r *AutomationReconciler) batchWait(obj *imagev1.ImageUpdateAutomation, changed bool) time.Duration {
	key := client.ObjectKeyFromObject(obj)
	delay := obj.GetPolicyChangeDelay()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !changed || delay <= 0 || obj.Status.ObservedPolicies == nil {
		delete(r.batches, key)
		return 0
	}
	if r.batches == nil {
		r.batches = map[types.NamespacedName]time.Time{}
	}
	since, ok := r.batches[key]
	if !ok {
		since = r.now()
		r.batches[key] = since
	}
	if left := since.Add(delay).Sub(r.now()); left > 0 {
		return left
	}
	delete(r.batches, key)
	return 0
}

// policiesChanged compares the observed policies with the current ones.
func policiesChanged(observed, current imagev1.ObservedPolicies) bool {
	return !maps.Equal(observed, current)
}
