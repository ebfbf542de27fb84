// Package controller holds kustomize-controller's reconciler.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/faultpoint"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner labels set on every applied object; prune deletes only objects
// carrying both with this Kustomization's values. Flux compatible.
const (
	NameLabel      = kustomize.NameLabel
	NamespaceLabel = kustomize.NamespaceLabel
	// FieldManager is the server-side apply field manager. Flux compatible.
	FieldManager = "kustomize-controller"
	sourceIndex  = ".spec.sourceRef"
	// statusOwner is the field owner of status patches. Flux compatible.
	statusOwner = "gotk-kustomize-controller"
)

// snapshot is what status.history records of a reconcile that built: the
// digest of the built objects and the revisions they came from.
type snapshot struct {
	digest   string
	metadata map[string]string
	// source is the source object read for the reconcile, nil when it
	// could not be read: the relatedObject of the Kustomization's events.
	source client.Object
}

// KustomizationReconciler builds a source artifact's manifests and applies
// them. Flux compatible: the pipeline, conditions, messages and events of
// kustomize-controller (contract §1.5, §4).
type KustomizationReconciler struct {
	client.Client
	// APIReader reads dependencies bypassing the cache, as Flux does.
	APIReader client.Reader
	Config    *rest.Config
	Fetcher   *artifact.Fetcher
	Events    *events.Recorder
	// NoCrossNamespaceRefs refuses sources in other namespaces.
	NoCrossNamespaceRefs bool
	// DefaultServiceAccount is impersonated when spec.serviceAccountName is empty.
	DefaultServiceAccount string
	// RequeueDependency is the wait for a source artifact or dependency (Flux: 30s).
	RequeueDependency time.Duration
	// HealthPoll is the interval of health checks (Flux: 5s).
	HealthPoll    time.Duration
	JitterPercent float64
	// ConcurrentSSA is the number of dry-runs in flight per reconcile
	// (Flux's --concurrent-ssa, 4).
	ConcurrentSSA int
	// ArtifactCacheBytes bounds the in-memory artifact cache; 0 means
	// DefaultArtifactCacheBytes.
	ArtifactCacheBytes int64
	// NonStrictSubstitutions substitutes "" for an undefined postBuild
	// variable without a default instead of failing: Flux's feature gate
	// StrictPostBuildSubstitutions=false (on by default).
	NonStrictSubstitutions bool
	// KeepHealthCheckOnNewRevision lets a running health check end (healthy,
	// failed or timed out) before a new source revision or generation is
	// applied, instead of canceling it: Flux's feature gate
	// CancelHealthCheckOnNewRevision=false (Eddy's default is true).
	KeepHealthCheckOnNewRevision bool
	// DisableCommitStatusEvent skips the "Reconciliation finished…" event
	// of a success (--feature-gates=DisableCommitStatusEvent=true).
	DisableCommitStatusEvent bool
	// AdditiveCELDependencyCheck checks a dependency's readiness as usual
	// besides its readyExpr, instead of the readyExpr alone
	// (--feature-gates=AdditiveCELDependencyCheck=true). Flux compatible.
	AdditiveCELDependencyCheck bool
	// AllowExternalArtifact lets spec.sourceRef name an ExternalArtifact
	// (--feature-gates=ExternalArtifact=true). Flux compatible.
	AllowExternalArtifact bool

	// KubeConfig are the switches for spec.kubeConfig's kubeconfigs
	// (--insecure-kubeconfig-tls, --insecure-kubeconfig-exec).
	KubeConfig KubeConfigOptions
	// UnchangedRecheck is --unchanged-recheck-interval: how long an object
	// found unchanged by a dry-run is not dry-run again while neither it
	// nor Git changes (ssa.UnchangedMemo); 0: every reconcile, as Flux.
	UnchangedRecheck time.Duration
	// SOPSHelper is the path of the SOPS helper eddy-sops; empty: looked
	// for at each decrypting build (decryptor.FindHelper), so that a helper
	// installed or removed later is seen without a restart.
	SOPSHelper string

	artifacts    *artifactCache
	healthChecks *healthChecks
	remotes      remoteClients
	unchanged    *ssa.UnchangedMemo // objects planned Unchanged, on this cluster
}

// failure is the skeleton's failed reconcile; Retry 0 means
// spec.retryInterval.
type failure = reconciler.Failure

// fail is reconcile.Fail.
var fail = reconciler.Fail

// timeout is spec.timeout, else interval − 30s, never below 30s. Flux compatible.
func timeout(k *kustomizev1.Kustomization) time.Duration {
	d := k.Spec.Interval.Duration - 30*time.Second
	if k.Spec.Timeout != nil {
		d = k.Spec.Timeout.Duration
	}
	return max(d, 30*time.Second)
}

// Reconcile brings one Kustomization's objects to its source's revision.
// The skeleton (pkg/reconciler) runs the finalizer and suspend prologue and
// writes the status last; run does the rest.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := reconciler.Skeleton[*kustomizev1.Kustomization]{
		Client: r.Client,
		Kind:   kustomizev1.KustomizationKind,
		// The finalizer is written as the status owner, not as the applier:
		// the applier takes over its own Update entries (managed-fields
		// cleanup), so a parent Kustomization applying this one would drop
		// the finalizer. Flux compatible (gotk-kustomize-controller).
		FieldOwner: statusOwner,
		Finalizer:  kustomizev1.KustomizationFinalizer,
		// A deleted or suspended Kustomization's health checks end with it.
		Finalize: func(ctx context.Context, obj *kustomizev1.Kustomization) (ctrl.Result, error) {
			r.healthChecks.stop(req.NamespacedName)
			return r.finalize(ctx, obj)
		},
		Suspended: func(obj *kustomizev1.Kustomization) bool {
			if obj.Spec.Suspend {
				r.healthChecks.stop(req.NamespacedName)
			}
			return obj.Spec.Suspend
		},
		// Deleted without Finalize (its finalizer removed by hand).
		Gone: r.healthChecks.stop,
	}
	return skel.Reconcile(ctx, req, &kustomizev1.Kustomization{}, r.run)
}

// run reconciles a live, unsuspended Kustomization, writes its status and
// emits the outcome's event. Flux requeues failures at the retry interval
// rather than with back-off; a stalled failure is returned as the error.
func (r *KustomizationReconciler) run(ctx context.Context, obj *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// progress reports a step of a reconcile on the object while it runs;
	// the write goes on beside the fetch, build and dry-runs, and lands
	// before anything is applied (settle) and before any later status write.
	progress := func(msg string) {
		reconciler.Progressing(obj, msg)
		p.Start(ctx, func(err error) { log.Error(err, "patching status") })
	}
	o := r.attempt(ctx, obj, statusWrites{progress: progress, save: func() error { return p.Patch(ctx) }, settle: p.Settle})
	if o.healthPending {
		return ctrl.Result{}, r.awaitHealthCheck(ctx, obj, p, o.start, &o.snap)
	}
	f, start, snap := o.failure, o.start, o.snap
	reconciler.Summarize(obj, f, kustomizev1.ReconciliationSucceededReason, "Applied revision: "+obj.Status.LastAppliedRevision)
	if snap.digest != "" {
		obj.Status.History.Upsert(snap.digest, time.Now(), time.Since(start),
			apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition).Reason, snap.metadata)
	}
	if err := p.Finish(ctx); err != nil {
		return ctrl.Result{}, err
	}
	annotations := r.eventMeta(obj)
	rec := r.Events.WithRelated(snap.source)
	switch {
	case f == nil:
		next := controllerkit.Jitter(obj.Spec.Interval.Duration, r.JitterPercent)
		annotations[kustomizev1.GroupVersion.Group+"/commit_status"] = "update"
		msg := fmt.Sprintf("Reconciliation finished in %s, next run in %s", time.Since(start).Round(time.Millisecond), obj.Spec.Interval.Duration)
		// Flux compatible: logged at info too, so `flux logs` shows each success.
		log.Info(msg, "revision", obj.Status.LastAttemptedRevision)
		// Flux compatible: the gate skips the event, Kubernetes Event too.
		if !r.DisableCommitStatusEvent {
			rec.Event(obj, corev1.EventTypeNormal, kustomizev1.ReconciliationSucceededReason, msg, annotations)
		}
		return ctrl.Result{RequeueAfter: next}, nil
	case f.Waiting:
		// Flux compatible: waiting is not failing, so no Warning event
		// (which an error-severity Alert would deliver).
		log.Info(f.Message)
	case f.Reason == meta.DependencyNotReadyReason:
		rec.Event(obj, corev1.EventTypeNormal, f.Reason,
			fmt.Sprintf("Dependencies do not meet ready condition, retrying in %s", f.Retry), annotations)
	}
	retry := f.Retry
	if retry == 0 {
		retry = obj.Spec.Interval.Duration
		if obj.Spec.RetryInterval != nil {
			retry = obj.Spec.RetryInterval.Duration
		}
	}
	if !f.Waiting && f.Reason != meta.DependencyNotReadyReason {
		// Flux compatible: a failure is logged at error level, so
		// `flux logs --level error` (and eddy logs) show it.
		if !f.Stalled {
			log.Error(errors.New(f.Message), fmt.Sprintf("Reconciliation failed after %s, next try in %s",
				time.Since(start).Round(time.Millisecond), retry), "revision", obj.Status.LastAttemptedRevision)
		}
		rec.Event(obj, corev1.EventTypeWarning, f.Reason, f.EventMessage(), annotations)
	}
	if f.Stalled {
		return ctrl.Result{}, f
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// requestPending returns the reconcile.fluxcd.io/requestedAt value when
// the request is not handled yet.
func requestPending(obj *kustomizev1.Kustomization) (string, bool) {
	req, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations())
	return req, ok && req != obj.Status.LastHandledReconcileAt
}

// unchangedAndReady tells whether a reconcile of revision would only check
// what the last one applied: the revision was applied, the spec's
// generation observed, Ready is True, and no reconcile was asked for
// (reconcile.fluxcd.io/requestedAt not yet handled: `flux reconcile` shows
// its progress).
func unchangedAndReady(obj *kustomizev1.Kustomization, revision string) bool {
	if _, requested := requestPending(obj); requested {
		return false
	}
	ready := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	return obj.Status.LastAppliedRevision == revision && obj.Status.LastAttemptedRevision == revision &&
		obj.Status.ObservedGeneration == obj.Generation && ready != nil && ready.Status == metav1.ConditionTrue &&
		ready.ObservedGeneration == obj.Generation
}

// outcome is what a reconcile attempt ends with: its failure (nil for
// success), or healthPending when its health checks go on in the
// background; its start and what status.history records of it.
type outcome struct {
	failure       *failure
	healthPending bool
	start         time.Time
	snap          snapshot
}

// ended is o ended with f, which may be healthPending.
func (o outcome) ended(f *failure) outcome {
	if f == healthPending {
		o.healthPending = true
		return o
	}
	o.failure = f
	return o
}

// attempt ends the reconcile whose health checks ran in the background
// (resumeHealthCheck) or, when there is none, runs a new one.
func (r *KustomizationReconciler) attempt(ctx context.Context, obj *kustomizev1.Kustomization, w statusWrites) outcome {
	o := outcome{start: time.Now()}
	f, resumed := r.resumeHealthCheck(ctx, obj, &o.snap, &o.start)
	if !resumed {
		return r.reconcile(ctx, obj, w, o.start)
	}
	return o.ended(f)
}

// reconcile runs source, dependencies, fetch, build, apply, prune and
// health checks, recording observations in obj.Status.
func (r *KustomizationReconciler) reconcile(ctx context.Context, obj *kustomizev1.Kustomization, w statusWrites, start time.Time) outcome {
	o := outcome{start: start}
	// Refuse rather than ignore what Eddy does not do yet: applying to this
	// cluster instead of a remote one would be worse than not applying.
	if kc := obj.Spec.KubeConfig; kc != nil && kc.SecretRef == nil {
		return o.ended(fail(meta.ReconciliationFailedReason, "spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet; use spec.kubeConfig.secretRef").Stall())
	}
	// Flux compatible: the health check expressions are compiled first, so
	// that a malformed one stalls the Kustomization with nothing applied.
	exprs, f := healthCheckExprs(obj)
	if f != nil {
		return o.ended(f)
	}
	src, art, f := r.source(ctx, obj)
	o.snap.source = src
	if f != nil {
		return o.ended(f)
	}
	if f := r.checkDependencies(ctx, obj, art.Revision); f != nil {
		return o.ended(f)
	}
	// A periodic reconcile of what is already applied and Ready writes no
	// progress (beyond Flux, whose every reconcile flips Ready to Unknown
	// and back in 4 status writes): 1 status write and 1 event when
	// nothing changed, so 1,000 unchanged Kustomizations cost the API
	// server little. Ready turns Unknown only when there is something new.
	steps := progressSteps{obj: obj, w: w, revision: art.Revision, quiet: unchangedAndReady(obj, art.Revision)}
	wasReady := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition) != nil
	obj.Status.LastAttemptedRevision = art.Revision
	step := steps.step
	step("Fetching manifests", wasReady)
	ctx, cancel := context.WithTimeout(ctx, timeout(obj))
	defer cancel()
	tree, f := r.fetch(ctx, obj.Spec.SourceRef.Kind, src, art)
	if f != nil {
		return o.ended(f)
	}
	step("Building manifests", false)
	res, secrets, f := r.build(ctx, obj, tree)
	if f != nil {
		return o.ended(f)
	}
	o.snap.digest, o.snap.metadata = historyOf(res, art)
	kustomize.SetOwnerLabels(res.Objects, obj.Name, obj.Namespace)
	c, err := r.clientFor(ctx, obj)
	if err != nil {
		return o.ended(fail(meta.ReconciliationFailedReason, "%s", err))
	}
	// The inventory names what is about to be applied before anything is:
	// a kill between the apply and the inventory write leaves no object
	// that the next reconcile would not prune. The write goes with the
	// progress one below, so it costs a request only when the set grew
	// while the revision did not (a changed substitution).
	before := obj.Status.Inventory.DeepCopy()
	grew := recordIntent(obj, c, res.Objects)
	step("Detecting drift", false)
	if grew {
		if err := w.save(); err != nil {
			return o.ended(fail(meta.ReconciliationFailedReason, "recording the inventory before applying: %s", err))
		}
	}
	rec := r.Events.WithRelated(src)
	mgr, changes, f := r.apply(ctx, obj, c, res.Objects, secrets, rec, w.settle)
	faultpoint.Hit(faultpoint.KustomizeAfterApply)
	if f != nil {
		if len(changes) == 0 {
			// Nothing was written (a set refused by its dry-run): the
			// inventory stays what it was.
			obj.Status.Inventory = before
		}
		return o.ended(f)
	}
	if f := r.prune(ctx, obj, mgr, changes, rec); f != nil {
		return o.ended(f)
	}
	var deletedWhenFinished map[string]bool
	if obj.Spec.Wait || len(obj.Spec.HealthChecks) > 0 {
		step("Running health checks", true)
		deletedWhenFinished = deletedWhenDone(res.Objects)
	}
	w.settle()
	f = r.startHealthCheck(ctx, obj, c, changes, deletedWhenFinished, exprs, src, art)
	if f == nil {
		obj.Status.LastAppliedRevision = art.Revision
		obj.Status.LastAppliedOriginRevision = art.Metadata["org.opencontainers.image.revision"]
	}
	return o.ended(f)
}

// progressSteps reports the steps of a reconcile of revision. Each step's
// progress is set in the status (a failure keeps the step it failed in),
// and written when a user sees a change: Ready turning Unknown at the
// first step (not on a first reconcile, which has no Ready yet), the
// inventory before the apply when it grew, the health checks. Building and
// detecting drift are short: writing them too cost two requests a
// reconcile. A quiet reconcile (unchangedAndReady) reports nothing.
type progressSteps struct {
	obj      *kustomizev1.Kustomization
	w        statusWrites
	revision string
	quiet    bool
}

// step sets the progress of step what and, with write, writes it.
func (s progressSteps) step(what string, write bool) {
	if s.quiet {
		return
	}
	msg := fmt.Sprintf("%s for revision %s with a timeout of %s", what, s.revision, timeout(s.obj))
	if write {
		s.w.progress(msg)
		return
	}
	reconciler.Progressing(s.obj, msg)
}
