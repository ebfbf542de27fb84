// Package reconciler is the skeleton every Eddy reconciler shares, so each
// kind writes only what is its own (the steps, its extra conditions, its
// events) and the Flux status contract is kept in one place.
//
// A reconciler declares a Skeleton and calls Skeleton.Reconcile from its
// Reconcile method with a run function for the kind's steps:
//
//	var skel = reconciler.Skeleton[*v1.Thing]{
//		Client: c, Kind: "Thing", Finalizer: v1.ThingFinalizer,
//		Suspended: func(o *v1.Thing) bool { return o.Spec.Suspend },
//	}
//	func (r *ThingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		return skel.Reconcile(ctx, req, &v1.Thing{}, func(ctx context.Context, obj *v1.Thing, p *reconciler.StatusPatcher) (ctrl.Result, error) {
//			f := r.steps(ctx, obj) // nil, or a *reconciler.Failure
//			reconciler.Summarize(obj, f, meta.SucceededReason, "Thing is ready")
//			if f != nil {
//				return ctrl.Result{}, f // a stalled Failure becomes a TerminalError
//			}
//			return ctrl.Result{RequeueAfter: obj.Spec.Interval.Duration}, nil
//		})
//	}
//
// Skeleton.Reconcile reads the object (gone: done), runs the finalizer
// prologue (Finalize then release for an object being deleted; add the
// finalizer otherwise), records a suspended object's observation with no
// other work, and otherwise calls run. Whatever run returns, early or not,
// the status is then written once more with the handled
// reconcile.fluxcd.io/requestedAt value (StatusPatcher.Finish), unless run
// did so itself. A stalled Failure returned by run reaches controller-runtime
// as reconcile.TerminalError: counted in
// controller_runtime_terminal_reconcile_errors_total, logged, not retried.
//
// Summarize writes Flux's Ready/Reconciling/Stalled summary from a Failure.
// The shape follows Flux's fluxcd/pkg runtime/patch (a patch helper
// deferred from Reconcile) and runtime/reconcile's summarize (conditions
// from the result), reduced to what Eddy's kinds need.
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Object is a kind the skeleton reconciles: a Kubernetes object whose
// status has conditions, observedGeneration and lastHandledReconcileAt
// (meta.ReconcileRequestStatus), reached through the accessors Eddy's API
// types define (GetConditions and the others, as Flux's types do).
type Object interface {
	client.Object
	meta.ObjectWithConditions
	meta.ObjectWithConditionsSetter
	meta.StatusWithHandledReconcileRequest
	meta.StatusWithHandledReconcileRequestSetter
	GetObservedGeneration() int64
	SetObservedGeneration(generation int64)
}

// Failure is a failed reconcile: the Ready reason and a stable message (it
// goes to status and events, so never a secret), and what may help.
type Failure struct {
	// Condition is the kind's abnormal condition the failure sets besides
	// Ready (e.g. source-controller's FetchFailed); "" for none. The kind
	// sets it; Summarize writes only Ready, Reconciling and Stalled.
	Condition string
	Reason    string
	Message   string
	// Detail is Eddy's addition to Message for the Warning event only
	// (e.g. why a failed object failed), so that the status keeps the
	// message Flux writes; "" for none.
	Detail string
	// Stalled: only a change of the spec (or of what it names) can help,
	// so the object is not retried (Flux's Stalled condition).
	Stalled bool
	// Waiting marks a wait for something another controller or the user is
	// expected to provide soon (a source, its artifact, an include): logged
	// and retried, not a Warning event. Flux compatible (serror.Waiting).
	Waiting bool
	// Retry is when to try again; 0 means the kind's default.
	Retry time.Duration
}

// Fail returns a Failure with reason and a message formatted as fmt.Sprintf.
func Fail(reason, format string, args ...any) *Failure {
	return &Failure{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Stall marks f stalled and returns it.
func (f *Failure) Stall() *Failure {
	f.Stalled = true
	return f
}

// Error returns the message.
func (f *Failure) Error() string { return f.Message }

// EventMessage is the message of the failure's Warning event: Message,
// then Detail in parentheses when there is one.
func (f *Failure) EventMessage() string {
	if f.Detail == "" {
		return f.Message
	}
	return f.Message + " (" + f.Detail + ")"
}

// SetCondition sets condition typ of obj at obj's generation.
func SetCondition(obj Object, typ string, status metav1.ConditionStatus, reason, message string) {
	conds := obj.GetConditions()
	apimeta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: message, ObservedGeneration: obj.GetGeneration()})
	obj.SetConditions(conds)
}

// RemoveConditions removes the conditions of the given types from obj.
func RemoveConditions(obj Object, types ...string) {
	conds := obj.GetConditions()
	for _, t := range types {
		apimeta.RemoveStatusCondition(&conds, t)
	}
	obj.SetConditions(conds)
}

// Progressing marks a step of a reconcile while it runs: Ready=Unknown
// Progressing "Reconciliation in progress" and Reconciling=True Progressing
// with msg. Flux compatible.
func Progressing(obj Object, msg string) {
	SetCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "Reconciliation in progress")
	SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, msg)
}

// Summarize writes Ready, Reconciling and Stalled for the outcome f of a
// reconcile (nil: success), and observedGeneration when the outcome is final
// for this generation. Flux compatible:
//   - success: Ready=True with readyReason and readyMessage; Reconciling
//     and Stalled removed; observedGeneration = generation.
//   - stalled: Ready=False and Stalled=True with f's reason and message;
//     Reconciling removed; observedGeneration = generation.
//   - otherwise: Ready=False with f's reason and message; Stalled removed;
//     Reconciling=True ProgressingWithRetry, keeping the message of the
//     step it failed in (Reconciling=True Progressing, see Progressing),
//     else f's message; observedGeneration unchanged.
func Summarize(obj Object, f *Failure, readyReason, readyMessage string) {
	if f == nil {
		RemoveConditions(obj, meta.ReconcilingCondition, meta.StalledCondition)
		SetCondition(obj, meta.ReadyCondition, metav1.ConditionTrue, readyReason, readyMessage)
		obj.SetObservedGeneration(obj.GetGeneration())
		return
	}
	SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, f.Reason, f.Message)
	if f.Stalled {
		RemoveConditions(obj, meta.ReconcilingCondition)
		SetCondition(obj, meta.StalledCondition, metav1.ConditionTrue, f.Reason, f.Message)
		obj.SetObservedGeneration(obj.GetGeneration())
		return
	}
	RemoveConditions(obj, meta.StalledCondition)
	msg := f.Message
	if c := apimeta.FindStatusCondition(obj.GetConditions(), meta.ReconcilingCondition); c != nil && c.Reason == meta.ProgressingReason {
		msg = c.Message
	}
	SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
}

// RecordHandledRequest copies obj's reconcile.fluxcd.io/requestedAt value,
// if any, to status.lastHandledReconcileAt: `flux reconcile` and `eddy
// reconcile` wait for it. Flux compatible (meta.ReconcileAnnotationValue).
func RecordHandledRequest(obj Object) {
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.SetLastHandledReconcileRequest(v)
	}
}

// ObserveSuspended records in the status what a reconcile of the suspended
// object obj observes, and nothing else: the handled reconcile request and,
// when Ready is True, obj's generation (status.observedGeneration and
// Ready's, with Reconciling removed), so a suspended Ready object reads as
// Current to kstatus, `kubectl wait` (which compares Ready's
// observedGeneration), a parent's health check and a dependant. A failing
// object keeps its old generation and its conditions. Flux compatible
// (kustomize-controller's finalizeStatus, notification-controller's
// Receiver), and Ready's generation as source-controller's summarize.
func ObserveSuspended(obj Object) {
	RecordHandledRequest(obj)
	conds := obj.GetConditions()
	if ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition); ready != nil && ready.Status == metav1.ConditionTrue {
		ready.ObservedGeneration = obj.GetGeneration()
		obj.SetConditions(conds)
		RemoveConditions(obj, meta.ReconcilingCondition)
		obj.SetObservedGeneration(obj.GetGeneration())
	}
}

// StatusPatcher writes an object's status as a merge patch from the last
// state written, skipping the request when nothing changed.
type StatusPatcher struct {
	c        client.Client
	obj      client.Object
	base     client.Object
	opts     []client.SubResourcePatchOption
	finished bool
	// beforeFinish runs first in Finish (the skeleton's duration metric).
	beforeFinish func()
	// pending is the write Start began, until Settle.
	pending *startedPatch
}

// startedPatch is a status write running beside the reconcile: sent is
// the status it writes, err its outcome once done is closed.
type startedPatch struct {
	done  chan struct{}
	sent  client.Object
	err   error
	onErr func(error)
}

// NewStatusPatcher returns a patcher of obj's status from its present
// state; owner is the field manager of the patches ("" for the client's).
func NewStatusPatcher(c client.Client, obj client.Object, owner string) *StatusPatcher {
	p := &StatusPatcher{c: c, obj: obj, base: obj.DeepCopyObject().(client.Object)}
	if owner != "" {
		p.opts = append(p.opts, client.FieldOwner(owner))
	}
	return p
}

// Patch writes the status changes since the last successful Patch. It
// returns the API error, if any; the changes are then kept for the next.
func (p *StatusPatcher) Patch(ctx context.Context) error {
	p.Settle()
	patch := client.MergeFrom(p.base)
	if data, err := patch.Data(p.obj); err == nil && string(data) == "{}" {
		return nil
	}
	if err := p.c.Status().Patch(ctx, p.obj, patch, p.opts...); err != nil {
		return err
	}
	p.base = p.obj.DeepCopyObject().(client.Object)
	return nil
}

// Start begins writing the status changes since the last write, as Patch
// does, and returns at once: a progress write (Ready turning Unknown) need
// not hold up the reads and dry-runs that follow it. The write is of obj
// as it is now; the response is not read back into obj. Patch, Finish,
// Pending and Settle wait for it first, so status writes keep their order;
// whoever writes anything else a user sees after the progress (the
// applied objects) calls Settle before. A failed write is handed to onErr
// (in Settle's goroutine) and its changes are kept for the next write.
func (p *StatusPatcher) Start(ctx context.Context, onErr func(error)) {
	p.Settle()
	patch := client.MergeFrom(p.base)
	if data, err := patch.Data(p.obj); err == nil && string(data) == "{}" {
		return
	}
	w := &startedPatch{done: make(chan struct{}), sent: p.obj.DeepCopyObject().(client.Object), onErr: onErr}
	target := w.sent.DeepCopyObject().(client.Object)
	p.pending = w
	go func() {
		defer close(w.done)
		w.err = p.c.Status().Patch(ctx, target, patch, p.opts...)
	}()
}

// Settle waits for the write Start began, if any.
func (p *StatusPatcher) Settle() {
	w := p.pending
	if w == nil {
		return
	}
	<-w.done
	p.pending = nil
	if w.err != nil {
		if w.onErr != nil {
			w.onErr(w.err)
		}
		return
	}
	p.base = w.sent
}

// Finish records the handled reconcile request (RecordHandledRequest) and
// writes the status: the last write of a reconcile. Skeleton.Reconcile
// calls it after run unless run did; run calls it itself to emit events
// only once the status they announce is written. Errors wrap Patch's as
// "patching status: ...".
func (p *StatusPatcher) Finish(ctx context.Context) error {
	p.finished = true
	if p.beforeFinish != nil {
		p.beforeFinish()
	}
	if o, ok := p.obj.(Object); ok {
		RecordHandledRequest(o)
	}
	if err := p.Patch(ctx); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// Pending writes the status as it stands, without recording the handled
// reconcile request, and ends the reconcile's status writes (Skeleton's
// deferred Finish is skipped): for a reconcile whose outcome a later
// reconcile writes, e.g. health checks still running in the background, so
// `flux reconcile` does not read the request as handled too early. Errors
// wrap Patch's as "patching status: ...".
func (p *StatusPatcher) Pending(ctx context.Context) error {
	p.finished = true
	if err := p.Patch(ctx); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// Skeleton is the shared part of the reconciler of kind T (a pointer to an
// API type implementing Object). The zero values of the optional fields
// select the plain behaviour.
type Skeleton[T Object] struct {
	Client client.Client
	// Kind labels the reconcile-duration metric (runtime.RecordDuration),
	// recorded before the last status write; "" records none.
	Kind string
	// FieldOwner is the field manager of the finalizer and status patches;
	// "" for the client's default.
	FieldOwner string
	// Finalizer is added to a live object before its first reconcile and
	// removed once Finalize succeeded on deletion; "" for none.
	Finalizer string
	// LegacyFinalizers are removed from every object, live or deleted
	// (finalizers older versions of the kind set that nothing needs now).
	LegacyFinalizers []string
	// Finalize cleans up after an object being deleted; Finalizer is
	// removed when it returns a zero result and no error. nil: nothing to
	// clean up.
	Finalize func(ctx context.Context, obj T) (ctrl.Result, error)
	// Suspended reports spec.suspend; nil: never suspended.
	Suspended func(obj T) bool
	// ObserveSuspended records a suspended object's observation in its
	// status; nil: ObserveSuspended.
	ObserveSuspended func(obj T)
	// Gone is called with the request's name when its object is not found
	// (deleted, with its finalizer removed by hand or already done), to
	// forget what the reconciler keeps in memory for it; nil: nothing.
	Gone func(key client.ObjectKey)
}

// Reconcile runs one reconcile of req into obj, a new empty T: the
// prologue, then run for a live, unsuspended object, then the status write
// (see the package documentation). It returns run's result and error, with
// a stalled *Failure wrapped as reconcile.TerminalError; a failed status
// write or finalizer patch is returned as the error.
func (s *Skeleton[T]) Reconcile(ctx context.Context, req ctrl.Request, obj T,
	run func(ctx context.Context, obj T, p *StatusPatcher) (ctrl.Result, error)) (result ctrl.Result, err error) {
	if err := s.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			if s.Kind != "" {
				controllerkit.DeleteDuration(s.Kind, req.Namespace, req.Name)
			}
			if s.Gone != nil {
				s.Gone(req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The duration is recorded before the last status write, so whoever
	// sees that write (a test, `eddy reconcile`) finds the sample too.
	start, recorded := time.Now(), false
	record := func() {
		if s.Kind != "" && !recorded {
			controllerkit.RecordDuration(s.Kind, obj.GetNamespace(), obj.GetName(), start)
		}
		recorded = true
	}
	defer record()
	if err := RemoveFinalizers(ctx, s.Client, obj, s.FieldOwner, s.LegacyFinalizers...); err != nil {
		return ctrl.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		if s.Finalize != nil {
			if res, err := s.Finalize(ctx, obj); err != nil || !res.IsZero() {
				return res, err
			}
		}
		if s.Finalizer != "" {
			if err := RemoveFinalizers(ctx, s.Client, obj, s.FieldOwner, s.Finalizer); err != nil {
				return ctrl.Result{}, err
			}
		}
		// The object goes: so does its duration series.
		if s.Kind != "" {
			recorded = true
			controllerkit.DeleteDuration(s.Kind, obj.GetNamespace(), obj.GetName())
		}
		return ctrl.Result{}, nil
	}
	if s.Finalizer != "" {
		// A patch, not an update: re-encoding the spec would rewrite
		// durations ("60s" as "1m0s") and bump the generation.
		base := obj.DeepCopyObject().(client.Object)
		if controllerutil.AddFinalizer(obj, s.Finalizer) {
			if err := s.Client.Patch(ctx, obj, client.MergeFrom(base), s.patchOpts()...); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	p := NewStatusPatcher(s.Client, obj, s.FieldOwner)
	if s.Suspended != nil && s.Suspended(obj) {
		ctrl.LoggerFrom(ctx).Info("reconciliation is suspended for this object")
		record()
		if s.ObserveSuspended != nil {
			s.ObserveSuspended(obj)
		} else {
			ObserveSuspended(obj)
		}
		if err := p.Patch(ctx); err != nil {
			return ctrl.Result{}, fmt.Errorf("patching status: %w", err)
		}
		return ctrl.Result{}, nil
	}
	p.beforeFinish = record
	defer func() {
		if !p.finished {
			if perr := p.Finish(ctx); perr != nil {
				result, err = ctrl.Result{}, perr
			}
		}
		var f *Failure
		if errors.As(err, &f) && f.Stalled {
			err = crreconcile.TerminalError(err)
		}
	}()
	return run(ctx, obj, p)
}

func (s *Skeleton[T]) patchOpts() []client.PatchOption {
	if s.FieldOwner == "" {
		return nil
	}
	return []client.PatchOption{client.FieldOwner(s.FieldOwner)}
}

// RemoveFinalizers patches names out of obj's finalizers, as field manager
// owner ("" for the client's default), when it has any of them; an object
// already gone is not an error.
func RemoveFinalizers(ctx context.Context, c client.Client, obj client.Object, owner string, names ...string) error {
	base := obj.DeepCopyObject().(client.Object)
	removed := false
	for _, n := range names {
		removed = controllerutil.RemoveFinalizer(obj, n) || removed
	}
	if !removed {
		return nil
	}
	var opts []client.PatchOption
	if owner != "" {
		opts = append(opts, client.FieldOwner(owner))
	}
	if err := c.Patch(ctx, obj, client.MergeFrom(base), opts...); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
