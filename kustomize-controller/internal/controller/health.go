package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/cel"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/polling/clusterreader"
	"sigs.k8s.io/cli-utils/pkg/kstatus/polling/statusreaders"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/cli-utils/pkg/object"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Health checks run in the background so that a Kustomization waiting for
// its objects (up to spec.timeout, by default interval − 30s, which can be
// an hour) does not hold one of the --concurrent workers meanwhile:
//
//  1. reconcile applies, then startHealthCheck starts a kstatus poller
//     (cli-utils polling, statuses computed by pkg/health) in a goroutine,
//     at most one per Kustomization, and waits for its first round. A set
//     that is already healthy, or already Failed, is decided there, in the
//     same reconcile, as before.
//  2. Otherwise Reconcile writes the applied state (inventory, Ready=Unknown,
//     Reconciling "Running health checks ...") and frees the worker
//     (awaitHealthCheck).
//  3. When the poller decides (healthy, Failed, or timeout), its goroutine
//     enqueues the Kustomization through a source.Channel, and the next
//     Reconcile ends the reconcile that started it (resumeHealthCheck): the
//     same conditions, history and events as a reconcile that waited.
//  4. A new generation of the Kustomization or a new artifact of its source
//     cancels the wait, as Flux does with its feature gate
//     CancelHealthCheckOnNewRevision (off by default there, on by default
//     here; same conditions and event): Ready=False HealthCheckCanceled
//     "New reconciliation triggered by <Kind>/<namespace>/<name>", a Normal
//     event "Health checks canceled due to new reconciliation triggered by
//     ...", and an immediate requeue, which applies the new revision. With
//     --feature-gates=CancelHealthCheckOnNewRevision=false the wait goes on
//     (in the background still) and the new revision is applied when it
//     ends, as Flux without the gate.
//
// The waits live in memory: after a restart the Kustomization is reconciled
// in full again, as after any restart.

// healthPending is reconcile's answer while its health checks go on in the
// background; Reconcile hands it to awaitHealthCheck.
var healthPending = &failure{Reason: meta.ProgressingReason, Message: "health checks running"}

// healthChecks are the running health checks, at most one per
// Kustomization. It is a manager Runnable that stops them all when the
// manager stops.
type healthChecks struct {
	mu      sync.Mutex
	waits   map[types.NamespacedName]*healthWait
	stopped bool
	// done carries the Kustomizations whose wait was decided to the
	// controller (source.Channel).
	done chan event.GenericEvent
	quit chan struct{}
	wg   sync.WaitGroup
}

func newHealthChecks() *healthChecks {
	return &healthChecks{waits: map[types.NamespacedName]*healthWait{}, done: make(chan event.GenericEvent, 64), quit: make(chan struct{})}
}

// Start blocks until ctx ends, then cancels the running waits and waits
// for their goroutines.
func (h *healthChecks) Start(ctx context.Context) error {
	<-ctx.Done()
	h.mu.Lock()
	h.stopped = true
	for key, w := range h.waits {
		w.cancel()
		delete(h.waits, key)
	}
	close(h.quit)
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// stop cancels and forgets the wait of key, if any.
func (h *healthChecks) stop(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waits[key]; w != nil {
		w.cancel()
		delete(h.waits, key)
	}
}

// stopWait cancels w and forgets it if it is still the wait of its key.
func (h *healthChecks) stopWait(w *healthWait) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.cancel()
	if h.waits[w.key] == w {
		delete(h.waits, w.key)
	}
}

// healthWait is the health check of one reconcile: what it checks, what it
// was started for, and its outcome.
type healthWait struct {
	key types.NamespacedName
	// uid tells a Kustomization deleted and recreated under key (its
	// finalizer removed by hand) from the one the wait was started for.
	uid        types.UID
	generation int64
	// source is `<Kind>/<namespace>/<name>`; revision and digest are its
	// artifact's when the checked objects were applied.
	source, revision, digest, originRevision string
	targets                                  []ssa.Change
	deletedWhenFinished                      map[string]bool
	changed                                  bool
	started                                  time.Time
	cancel                                   context.CancelFunc
	firstRound                               chan struct{} // closed once each target was read, or when decided
	firstOnce                                sync.Once

	// Guarded by healthChecks.mu.
	decided  bool
	detached bool // the worker left: a decision enqueues the Kustomization
	outcome  healthOutcome
	// Of the reconcile that started the wait, for its history and events.
	reconcileStart time.Time
	snap           snapshot
	related        client.Object // the source, relatedObject of the wait's events
}

// healthOutcome is what the poller decided, after elapsed: all healthy
// (the zero value), one Failed, a timeout with what was pending, or a poller
// error.
type healthOutcome struct {
	elapsed time.Duration
	failed  string
	detail  string // of the failed objects, for the event only
	pending []string
	// explained are the pending objects, with what their pods show
	// (ssa.DetailMessage).
	explained []ssa.ObjectStatus
	err       error
}

// terminalErrorMessage prefixes the message of a spec that cannot work
// until it is changed. Flux compatible (kustomize-controller's
// TerminalErrorMessage).
const terminalErrorMessage = "Reconciliation failed terminally due to configuration error"

// healthCheckExprs compiles spec.healthCheckExprs (nil when there are
// none). A malformed expression, an entry without current, or two entries
// for one kind is Stalled with Ready=False InvalidCELExpression, the
// message naming the entry and the expression. Flux compatible, e.g.
// "Reconciliation failed terminally due to configuration error: failed to
// create custom status evaluator for healthchecks[0]: failed to parse the
// expression Current: failed to parse the CEL expression '<expr>': ERROR: ...".
//
// Then it checks spec.healthChecks (healthCheckRefs), so that a
// Kustomization whose health checks can never pass stalls with nothing
// applied too.
func healthCheckExprs(obj *kustomizev1.Kustomization) (*cel.HealthChecks, *failure) {
	if len(obj.Spec.HealthCheckExprs) == 0 {
		return nil, healthCheckRefs(obj)
	}
	exprs, err := cel.NewHealthChecks(obj.Spec.HealthCheckExprs)
	if err != nil {
		f := fail(meta.InvalidCELExpressionReason, "%s: %s", terminalErrorMessage, err)
		f.Stalled = true
		return nil, f
	}
	if f := healthCheckRefs(obj); f != nil {
		return nil, f
	}
	return exprs, nil
}

// healthCheckRefs checks that each of spec.healthChecks has a valid
// apiVersion (`group/version` or `version`; empty is the core group). An
// invalid one is Stalled with Ready=False ReconciliationFailed, the message
// naming the entry, e.g. "Reconciliation failed terminally due to
// configuration error: spec.healthChecks[0] Deployment/ns/app: invalid
// apiVersion "apps/v1/x": unexpected GroupVersion string: apps/v1/x":
// the check could never pass, so waiting for it until the timeout would
// only hide the mistake.
func healthCheckRefs(obj *kustomizev1.Kustomization) *failure {
	for i, hc := range obj.Spec.HealthChecks {
		if _, err := schema.ParseGroupVersion(hc.APIVersion); err != nil {
			f := fail(meta.ReconciliationFailedReason, "%s: spec.healthChecks[%d] %s/%s/%s: invalid apiVersion %q: %s",
				terminalErrorMessage, i, hc.Kind, nsOr(hc.Namespace, obj.Namespace), hc.Name, hc.APIVersion, err)
			f.Stalled = true
			return f
		}
	}
	return nil
}

// statusFunc is the status of an object in a health check: by the
// Kustomization's healthCheckExprs when one is for its kind (or its API
// group), else pkg/health's kstatus rules. A batch Job keeps Flux's Job
// rule even with an expression for it, as Flux's Job status reader comes
// before its CEL reader. Flux compatible.
func statusFunc(ctx context.Context, exprs *cel.HealthChecks) func(*unstructured.Unstructured) (*status.Result, error) {
	if exprs.Len() == 0 {
		return health.Compute
	}
	return func(u *unstructured.Unstructured) (*status.Result, error) {
		if h := exprs.For(u.GroupVersionKind().GroupKind()); h != nil && !health.IsJob(u) {
			return h.Status(ctx, u)
		}
		return health.Compute(u)
	}
}

// healthTargets are the objects checked: all applied objects but skipped
// ones with spec.wait, else spec.healthChecks (namespace defaulting to the
// Kustomization's, none for a kind clusterScoped reports), never the
// Kustomization itself (it would wait for its own reconcile to end); ok is
// false when neither is set. Flux compatible.
func healthTargets(obj *kustomizev1.Kustomization, changes []ssa.Change, clusterScoped func(gk schema.GroupKind, version string) bool) (targets []ssa.Change, ok bool) {
	switch {
	case obj.Spec.Wait:
		for _, ch := range changes {
			if ch.Action != ssa.Skipped {
				targets = append(targets, ch)
			}
		}
	case len(obj.Spec.HealthChecks) > 0:
		for _, hc := range obj.Spec.HealthChecks {
			gv, _ := schema.ParseGroupVersion(hc.APIVersion) // checked by healthCheckRefs
			gk := gv.WithKind(hc.Kind).GroupKind()
			// The poller reports a cluster-scoped object under its real,
			// empty namespace: an id with one would never get a status.
			// (Applied objects, spec.wait, have theirs cleared by pkg/ssa.)
			ns := nsOr(hc.Namespace, obj.Namespace)
			if clusterScoped(gk, gv.Version) {
				ns = ""
			}
			targets = append(targets, ssa.Change{
				Meta:    ssa.ObjMeta{Namespace: ns, Name: hc.Name, GroupKind: gk},
				Version: gv.Version,
			})
		}
	default:
		return nil, false
	}
	self := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}
	seen := map[string]bool{}
	targets = slices.DeleteFunc(targets, func(t ssa.Change) bool {
		dup := seen[t.Meta.ID()]
		seen[t.Meta.ID()] = true
		return dup || t.Meta.GroupKind == self && t.Meta.Namespace == obj.Namespace && t.Meta.Name == obj.Name
	})
	return targets, true
}

// clusterScoped reports whether the REST mapping of gk (version preferred)
// by mapper, the applying cluster's (a remote one's for spec.kubeConfig),
// is cluster-scoped; false when it cannot be mapped, so that such a target
// keeps its namespace and stays pending with the mapping error.
func clusterScoped(mapper apimeta.RESTMapper) func(gk schema.GroupKind, version string) bool {
	return func(gk schema.GroupKind, version string) bool {
		m, err := mapper.RESTMapping(gk, version)
		return err == nil && m.Scope.Name() == apimeta.RESTScopeNameRoot
	}
}

// startHealthCheck checks the health of what reconcile applied (see
// healthTargets): the objects must be Current in kstatus's terms with
// pkg/health's rules (Flux's Job rule), or by exprs (healthCheckExprs) for
// the kinds they name, and a Failed one fails at once; an
// object that is gone is pending ('NotFound') unless its ID is in
// deletedWhenFinished (a Job with a TTL). It returns nil when healthy,
// HealthCheckFailed when decided unhealthy within the poller's first round,
// and healthPending when the wait goes on in the background until the
// deadline of ctx (the Kustomization's timeout). Flux compatible.
func (r *KustomizationReconciler) startHealthCheck(ctx context.Context, obj *kustomizev1.Kustomization, c client.Client, changes []ssa.Change,
	deletedWhenFinished map[string]bool, exprs *cel.HealthChecks, src client.Object, art *meta.Artifact) *failure {
	targets, ok := healthTargets(obj, changes, clusterScoped(c.RESTMapper()))
	if !ok {
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, kustomizev1.HealthyCondition)
		return nil
	}
	w := &healthWait{
		key: client.ObjectKeyFromObject(obj), uid: obj.UID, generation: obj.Generation,
		source:   fmt.Sprintf("%s/%s/%s", obj.Spec.SourceRef.Kind, nsOr(obj.Spec.SourceRef.Namespace, obj.Namespace), obj.Spec.SourceRef.Name),
		revision: art.Revision, digest: art.Digest, originRevision: art.Metadata["org.opencontainers.image.revision"],
		targets: targets, deletedWhenFinished: deletedWhenFinished, changed: changed(changes),
		started: time.Now(), firstRound: make(chan struct{}), related: src,
	}
	if len(targets) == 0 {
		return r.healthResult(obj, w)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = w.started.Add(timeout(obj))
	}
	// The wait outlives this reconcile: not its context, its deadline.
	waitCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	w.cancel = cancel
	h := r.healthChecks
	h.mu.Lock()
	if h.stopped { // the manager stops: the next start reconciles again
		h.mu.Unlock()
		cancel()
		return healthPending
	}
	if old := h.waits[w.key]; old != nil {
		old.cancel()
	}
	h.waits[w.key] = w
	h.wg.Add(1)
	h.mu.Unlock()
	// kstatus's generic status reader with pkg/health's status for every
	// kind (cli-utils' polling.NewStatusPoller would also pull in
	// k8s.io/kubectl). The direct reader makes one GET per object and round
	// as the applying account: no LIST permission needed.
	read := healthReader(c, statusFunc(waitCtx, exprs), w.deletedWhenFinished)
	go func() {
		defer h.wg.Done()
		r.waitHealthy(waitCtx, w, read, podsExplainer(c))
	}()

	<-w.firstRound
	h.mu.Lock()
	decided := w.decided
	if decided && h.waits[w.key] == w {
		delete(h.waits, w.key)
	}
	h.mu.Unlock()
	if !decided {
		return healthPending
	}
	return r.healthResult(obj, w)
}

// healthReader reads the status of one target as cli-utils' poller engine
// does, through c: NotFound, or Unknown with the error when it cannot be
// read or computed. An object that is gone counts as Current when its ID is
// in deletedWhenFinished (a Job with a TTL).
func healthReader(c client.Client, compute func(*unstructured.Unstructured) (*status.Result, error),
	deletedWhenFinished map[string]bool) func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error) {
	reader := statusreaders.NewGenericStatusReader(c.RESTMapper(), compute)
	cluster := &clusterreader.DirectClusterReader{Reader: c}
	return func(ctx context.Context, t ssa.ObjMeta) (ssa.ObjectStatus, error) {
		rs, err := reader.ReadStatus(ctx, cluster, object.ObjMetadata{Namespace: t.Namespace, Name: t.Name, GroupKind: t.GroupKind})
		if err != nil {
			return ssa.ObjectStatus{}, err
		}
		st := ssa.ObjectStatus{Status: rs.Status, Message: rs.Message, Err: rs.Error, Object: rs.Resource}
		if st.Status == status.NotFoundStatus && deletedWhenFinished[t.ID()] {
			st.Status = status.CurrentStatus
		}
		return st, nil
	}
}

// podsExplainer says, through c, what the pods of an object that is not
// healthy show (health.PodsDetail), read once when the wait is decided.
func podsExplainer(c client.Reader) func(context.Context, ssa.ObjectStatus) string {
	return func(ctx context.Context, s ssa.ObjectStatus) string {
		if s.Object == nil {
			return ""
		}
		return health.PodsDetail(ctx, c, s.Object)
	}
}

// waitHealthy reads the targets of w every r.HealthPoll (Flux: 5s) until
// all are healthy, one is Failed, or ctx ends (ssa.WaitForSet), and records
// the outcome.
func (r *KustomizationReconciler) waitHealthy(ctx context.Context, w *healthWait, read func(context.Context, ssa.ObjMeta) (ssa.ObjectStatus, error),
	explain func(context.Context, ssa.ObjectStatus) string) {
	poll := r.HealthPoll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	targets := make([]ssa.ObjMeta, len(w.targets))
	for i, t := range w.targets {
		targets[i] = t.Meta
	}
	firstRound := func() { w.firstOnce.Do(func() { close(w.firstRound) }) }
	st, err := ssa.WaitForSet(ctx, targets, ssa.SetWait{Poll: poll, Read: read, FirstRound: firstRound, Explain: explain})
	var out *healthOutcome
	switch {
	case err == nil && len(st.Failed) > 0:
		out = failedOutcome(st.Failed)
	case err == nil:
		out = &healthOutcome{}
	case ctx.Err() == nil:
		out = &healthOutcome{err: err}
	case !errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		firstRound()
		return // canceled: nobody waits for the outcome
	default:
		out = &healthOutcome{pending: ssa.StatusLines(st.Pending), explained: st.Pending}
	}
	out.elapsed = time.Since(w.started)

	h := r.healthChecks
	h.mu.Lock()
	w.decided, w.outcome = true, *out
	notify := w.detached && h.waits[w.key] == w
	h.mu.Unlock()
	firstRound()
	if notify {
		h.enqueue(w.key)
	}
}

// enqueue has the controller reconcile key (source.Channel).
func (h *healthChecks) enqueue(key types.NamespacedName) {
	k := &kustomizev1.Kustomization{}
	k.Namespace, k.Name = key.Namespace, key.Name
	select {
	case h.done <- event.GenericEvent{Object: k}:
	case <-h.quit:
	}
}

// failedOutcome lists the Failed objects as `failed early due to stalled
// resources: [Kind/namespace/name status: 'Failed', ...]`. Flux compatible
// (fluxcd/pkg ssa WaitForSet). Beyond Flux, what their pods show follows
// (ssa.DetailMessage), and detail gives kstatus's message of each Failed
// object that has one (`Job/ns/name: Job Failed. failed: 1/1`), for the
// event only.
func failedOutcome(failed []ssa.ObjectStatus) *healthOutcome {
	var failures, details []string
	for _, s := range failed {
		failures = append(failures, fmt.Sprintf("%s status: 'Failed'", s.Meta))
		if s.Message != "" {
			details = append(details, fmt.Sprintf("%s: %s", s.Meta, s.Message))
		}
	}
	msg := "failed early due to stalled resources: [" + strings.Join(failures, ", ") + "]"
	return &healthOutcome{failed: ssa.DetailMessage(msg, failed),
		detail: strings.Join(details, "; ")}
}

// healthResult writes the outcome of w to obj's Healthy condition and,
// when healthy, emits "Health check passed in ..." if it is a recovery, a
// new revision or a change (not every periodic reconcile). Flux compatible.
func (r *KustomizationReconciler) healthResult(obj *kustomizev1.Kustomization, w *healthWait) *failure {
	o := w.outcome
	after := o.elapsed.Round(time.Second)
	switch {
	case o.failed != "":
		f := r.unhealthy(obj, fmt.Sprintf("health check failed after %s: %s", after, o.failed))
		f.Detail = o.detail
		return f
	case o.err != nil:
		return r.unhealthy(obj, fmt.Sprintf("health check failed after %s: %s", after, o.err))
	case len(o.pending) > 0:
		return r.unhealthy(obj, fmt.Sprintf("health check failed after %s: %s", after, ssa.DetailMessage(ssa.TimeoutMessage(o.pending), o.explained)))
	}
	msg := fmt.Sprintf("Health check passed in %s", o.elapsed.Round(time.Millisecond))
	notify := !apimeta.IsStatusConditionTrue(obj.Status.Conditions, kustomizev1.HealthyCondition) ||
		obj.Status.LastAppliedRevision != obj.Status.LastAttemptedRevision || w.changed
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: kustomizev1.HealthyCondition,
		Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: msg, ObservedGeneration: obj.Generation})
	if notify {
		r.Events.WithRelated(w.related).Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg, r.eventMeta(obj))
	}
	return nil
}

// awaitHealthCheck frees the worker of a reconcile whose health checks go
// on (healthPending): it keeps start and snap for the reconcile's end and
// writes what reconcile observed so far (inventory, attempted revision,
// Ready=Unknown, Reconciling "Running health checks ...") through
// p.Pending, which leaves the reconcile request unhandled until the
// outcome is written.
func (r *KustomizationReconciler) awaitHealthCheck(ctx context.Context, obj *kustomizev1.Kustomization, p *reconciler.StatusPatcher,
	start time.Time, snap *snapshot) error {
	h := r.healthChecks
	h.mu.Lock()
	w := h.waits[client.ObjectKeyFromObject(obj)]
	decided := false
	if w != nil && !w.detached {
		w.detached, w.reconcileStart, w.snap = true, start, *snap
		decided = w.decided // decided after reconcile looked: enqueue here
	}
	h.mu.Unlock()
	if err := p.Pending(ctx); err != nil {
		return err
	}
	if decided {
		h.enqueue(w.key)
	}
	return nil
}

// resumeHealthCheck handles a reconcile of a Kustomization whose health
// checks run in the background (resumed false when there are none):
//   - still running for this generation and source artifact: healthPending,
//     nothing to do until they are decided (a reconcile request is recorded
//     as handled then);
//   - decided: their outcome (nil or HealthCheckFailed), with the start
//     time and snapshot of the reconcile that applied, so that Reconcile
//     ends that reconcile;
//   - a new generation, or a new artifact of the source: the wait is
//     canceled, HealthCheckCanceled. Flux compatible with its feature gate
//     CancelHealthCheckOnNewRevision, on by default in Eddy. With the gate
//     off (r.KeepHealthCheckOnNewRevision) the wait goes on, still without
//     a worker: healthPending, as if nothing had changed.
//
// A decided wait of an older generation or artifact is dropped (resumed
// false): the new one is reconciled in full, so with the gate off the new
// revision is applied once the wait ends, as Flux without the gate.
func (r *KustomizationReconciler) resumeHealthCheck(ctx context.Context, obj *kustomizev1.Kustomization, snap *snapshot, start *time.Time) (f *failure, resumed bool) {
	h := r.healthChecks
	key := client.ObjectKeyFromObject(obj)
	h.mu.Lock()
	w := h.waits[key]
	h.mu.Unlock()
	if w == nil {
		return nil, false
	}
	if w.uid != obj.UID { // the wait of a deleted object of the same name
		h.stopWait(w)
		return nil, false
	}
	trigger := ""
	if obj.Generation != w.generation {
		trigger = fmt.Sprintf("%s/%s/%s", kustomizev1.KustomizationKind, obj.Namespace, obj.Name)
	} else if _, art, f := r.source(ctx, obj); f == nil && (art.Revision != w.revision || art.Digest != w.digest) {
		trigger = w.source
	}
	h.mu.Lock()
	current, decided := h.waits[key] == w, w.decided
	keep := trigger != "" && !decided && r.KeepHealthCheckOnNewRevision
	if current && (decided || trigger != "") && !keep {
		delete(h.waits, key)
	}
	h.mu.Unlock()
	switch {
	case !current:
		return nil, false
	case (trigger == "" || keep) && !decided:
		return healthPending, true
	case trigger == "":
		*start, *snap = w.reconcileStart, w.snap
		// As written when the worker left, whether or not the cache has it yet.
		obj.Status.LastAttemptedRevision = w.revision
		f = r.healthResult(obj, w)
		if f == nil {
			obj.Status.LastAppliedRevision, obj.Status.LastAppliedOriginRevision = w.revision, w.originRevision
		}
		return f, true
	case decided:
		return nil, false
	}
	w.cancel()
	r.Events.WithRelated(w.related).Event(obj, corev1.EventTypeNormal, meta.HealthCheckCanceledReason,
		"Health checks canceled due to new reconciliation triggered by "+trigger, r.eventMeta(obj))
	f = fail(meta.HealthCheckCanceledReason, "New reconciliation triggered by %s", trigger)
	// Logged, not a Warning: the new revision or generation is applied at
	// once, as Flux requeues at once.
	f.Waiting, f.Retry = true, time.Millisecond
	return f, true
}

// changed reports whether a change set wrote anything.
func changed(changes []ssa.Change) bool {
	for _, c := range changes {
		if c.Action != ssa.Unchanged && c.Action != ssa.Skipped {
			return true
		}
	}
	return false
}

func (r *KustomizationReconciler) unhealthy(obj *kustomizev1.Kustomization, msg string) *failure {
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: kustomizev1.HealthyCondition,
		Status: metav1.ConditionFalse, Reason: kustomizev1.HealthCheckFailedReason, Message: msg, ObservedGeneration: obj.Generation})
	return fail(kustomizev1.HealthCheckFailedReason, "%s", msg)
}
