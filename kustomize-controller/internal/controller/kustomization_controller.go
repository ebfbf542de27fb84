// Package controller holds kustomize-controller's reconciler.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/reconcile"
	"github.com/eddyops/eddy/pkg/redact"
	eddyruntime "github.com/eddyops/eddy/pkg/runtime"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
type failure = reconcile.Failure

// fail is reconcile.Fail.
var fail = reconcile.Fail

// timeout is spec.timeout, else interval − 30s, never below 30s. Flux compatible.
func timeout(k *kustomizev1.Kustomization) time.Duration {
	d := k.Spec.Interval.Duration - 30*time.Second
	if k.Spec.Timeout != nil {
		d = k.Spec.Timeout.Duration
	}
	return max(d, 30*time.Second)
}

// Reconcile brings one Kustomization's objects to its source's revision.
// The skeleton (pkg/reconcile) runs the finalizer and suspend prologue and
// writes the status last; run does the rest.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := reconcile.Skeleton[*kustomizev1.Kustomization]{
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
func (r *KustomizationReconciler) run(ctx context.Context, obj *kustomizev1.Kustomization, p *reconcile.StatusPatcher) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	// progress reports a step of a reconcile on the object while it runs.
	progress := func(msg string) {
		reconcile.Progressing(obj, msg)
		if err := p.Patch(ctx); err != nil {
			log.Error(err, "patching status")
		}
	}
	snap := &snapshot{}
	// A reconcile whose health checks run in the background (healthPending)
	// writes what it applied and leaves; the reconcile after their end
	// resumes it (health.go).
	f, resumed := r.resumeHealthCheck(ctx, obj, snap, &start)
	if !resumed {
		f = r.reconcile(ctx, obj, progress, snap)
	}
	if f == healthPending {
		return ctrl.Result{}, r.awaitHealthCheck(ctx, obj, p, start, snap)
	}
	reconcile.Summarize(obj, f, kustomizev1.ReconciliationSucceededReason, "Applied revision: "+obj.Status.LastAppliedRevision)
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
		next := eddyruntime.Jitter(obj.Spec.Interval.Duration, r.JitterPercent)
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

// reconcile runs source, dependencies, fetch, build, apply, prune and
// health checks, recording observations in obj.Status.
func (r *KustomizationReconciler) reconcile(ctx context.Context, obj *kustomizev1.Kustomization, progress func(string), snap *snapshot) *failure {
	// Refuse rather than ignore what Eddy does not do yet: applying to this
	// cluster instead of a remote one would be worse than not applying.
	switch {
	case obj.Spec.KubeConfig != nil && obj.Spec.KubeConfig.SecretRef == nil:
		f := fail(meta.ReconciliationFailedReason, "spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet; use spec.kubeConfig.secretRef")
		f.Stalled = true
		return f
	}
	// Flux compatible: the health check expressions are compiled first, so
	// that a malformed one stalls the Kustomization with nothing applied.
	exprs, f := healthCheckExprs(obj)
	if f != nil {
		return f
	}
	src, art, f := r.source(ctx, obj)
	snap.source = src
	if f != nil {
		return f
	}
	if f := r.checkDependencies(ctx, obj, art.Revision); f != nil {
		return f
	}
	// A periodic reconcile of what is already applied and Ready writes no
	// progress (beyond Flux, whose every reconcile flips Ready to Unknown
	// and back in 4 status writes): 1 status write and 1 event when
	// nothing changed, so 1,000 unchanged Kustomizations cost the API
	// server little. Ready turns Unknown only when there is something new.
	quiet := unchangedAndReady(obj, art.Revision)
	obj.Status.LastAttemptedRevision = art.Revision
	step := func(what string) {
		if !quiet {
			progress(fmt.Sprintf("%s for revision %s with a timeout of %s", what, art.Revision, timeout(obj)))
		}
	}
	step("Fetching manifests")

	ctx, cancel := context.WithTimeout(ctx, timeout(obj))
	defer cancel()
	tree, err := r.artifacts.Get(ctx, art.URL, art.Digest)
	if err != nil {
		// Flux compatible (v1.10.1): the source may not have updated its
		// status yet, so a missing artifact or one whose digest changed is
		// waited for at --requeue-dependency.
		cause := ""
		switch {
		case errors.Is(err, artifact.ErrNotFound):
			cause = "artifact not found"
		case errors.Is(err, artifact.ErrDigestMismatch):
			cause = "artifact digest changed"
		}
		if cause != "" {
			f := fail(meta.ArtifactFailedReason, "Source is not ready, %s, retrying in %s", cause, r.RequeueDependency)
			f.Retry, f.Waiting = r.RequeueDependency, true
			return f
		}
		return fail(meta.ArtifactFailedReason, "%s", err)
	}

	step("Building manifests")
	opts, secretValues, f := r.buildOptions(ctx, obj)
	if f != nil {
		return f
	}
	var dec *decryptor.Decryptor
	if obj.Spec.Decryption != nil {
		// Flux compatible: the decryption Secret's keys are read for each
		// build; a failure to read them is a build failure.
		helper := r.SOPSHelper
		if helper == "" {
			helper, _ = decryptor.FindHelper() // "" when missing: New says so
		}
		if dec, err = decryptor.New(ctx, r, obj, helper); err != nil {
			return fail(meta.BuildFailedReason, "%s", err)
		}
		opts.Decryptor = dec
	}
	res, err := kustomize.Build(tree, opts)
	if dec != nil {
		dec.Close()
		// Decrypted values are masked in apply errors as substituted
		// Secret values are.
		secretValues = append(dec.Values(), secretValues...)
	}
	if err != nil {
		if errors.Is(err, kustomize.ErrPathNotFound) {
			return fail(meta.ArtifactFailedReason, "%s", err) // Flux compatible reason
		}
		return fail(meta.BuildFailedReason, "%s", redact.NewValues(kustomize.SecretMask, secretValues).Mask(err.Error()))
	}
	if dec == nil {
		if f := refuseEncrypted(res.Objects); f != nil {
			return f
		}
	}
	// Flux compatible: the history digest is the sha256 of the built YAML.
	snap.digest = digest.FromBytes(res.YAML).String()
	snap.metadata = map[string]string{"revision": art.Revision}
	if origin := art.Metadata["org.opencontainers.image.revision"]; origin != "" {
		snap.metadata["originRevision"] = origin
	}
	kustomize.SetOwnerLabels(res.Objects, obj.Name, obj.Namespace)

	c, err := r.clientFor(ctx, obj)
	if err != nil {
		return fail(meta.ReconciliationFailedReason, "%s", err)
	}
	step("Detecting drift")
	ignore, err := ssa.SpecIgnoreRules(obj.Spec.Ignore)
	if err != nil {
		f := fail(meta.ReconciliationFailedReason, "%s", err)
		f.Stalled = true
		return f
	}
	mgr := &ssa.Manager{Client: c, Owner: FieldManager, Poll: time.Second, Concurrency: r.ConcurrentSSA}
	if _, requested := requestPending(obj); obj.Spec.KubeConfig == nil && !requested {
		// Objects found unchanged before are not dry-run again while
		// neither they nor Git changed (ssa.UnchangedMemo); the scope keeps
		// each Kustomization and the identity it applies as apart. A
		// requested reconcile (`flux reconcile`) dry-runs everything.
		mgr.Memo, mgr.MemoScope = r.unchanged, obj.Namespace+"/"+obj.Name+"\x00"+r.serviceAccount(obj)
	}
	changes, err := mgr.ApplyAll(ctx, res.Objects, ssa.ApplyOptions{Force: obj.Spec.Force, Ignore: ignore})
	rec := r.Events.WithRelated(src)
	r.reportChanges(rec, obj, changes, secretValues)
	if err != nil {
		// Flux compatible: a partial apply lists what it changed; values
		// substituted from Secrets are masked (v1.9.6).
		msg := err.Error()
		for _, ch := range changes {
			if ch.Action != ssa.Unchanged && ch.Action != ssa.Skipped {
				msg += "\n" + ch.String()
			}
		}
		return fail(meta.ReconciliationFailedReason, "%s", redact.NewValues(kustomize.SecretMask, secretValues).Mask(msg))
	}

	inventory := map[string]kustomizev1.ResourceRef{}
	for _, ch := range changes {
		inventory[ch.Meta.ID()] = kustomizev1.ResourceRef{ID: ch.Meta.ID(), Version: ch.Version}
	}
	var pruneErr error
	if obj.Spec.Prune && obj.Status.Inventory != nil {
		applied := make([]ssa.ObjMeta, 0, len(changes))
		for _, ch := range changes {
			applied = append(applied, ch.Meta)
		}
		ids := make([]string, 0, len(obj.Status.Inventory.Entries))
		for _, e := range obj.Status.Inventory.Entries {
			ids = append(ids, e.ID)
		}
		staleByID, invalid := ssa.Stale(ids, applied)
		for _, id := range invalid {
			ctrl.LoggerFrom(ctx).Info("skipping an inventory entry that is no object id; its object is not pruned", "id", id)
		}
		var stale []ssa.Change
		for _, e := range obj.Status.Inventory.Entries {
			if m, ok := staleByID[e.ID]; ok {
				stale = append(stale, ssa.Change{Meta: m, Version: e.Version})
			}
		}
		if len(stale) > 0 {
			deleted, failed, err := mgr.DeleteStale(ctx, stale, ssa.PruneOptions{OwnerLabels: map[string]string{NameLabel: obj.Name, NamespaceLabel: obj.Namespace}})
			r.reportChanges(rec, obj, deleted, nil)
			for _, fc := range failed {
				inventory[fc.Meta.ID()] = kustomizev1.ResourceRef{ID: fc.Meta.ID(), Version: fc.Version}
			}
			pruneErr = err
		}
	}
	obj.Status.Inventory = &kustomizev1.ResourceInventory{Entries: sortedEntries(inventory)}
	if pruneErr != nil {
		return fail(meta.PruneFailedReason, "%s", pruneErr)
	}

	var deletedWhenFinished map[string]bool
	if obj.Spec.Wait || len(obj.Spec.HealthChecks) > 0 {
		step("Running health checks")
		// Flux compatible: a Job the TTL controller deletes once finished
		// may be gone by the time it is checked.
		deletedWhenFinished = map[string]bool{}
		for _, u := range res.Objects {
			if health.DeletedWhenFinished(u) {
				deletedWhenFinished[ssa.MetaOf(u).ID()] = true
			}
		}
	}
	if f := r.startHealthCheck(ctx, obj, c, changes, deletedWhenFinished, exprs, src, art); f != nil {
		return f
	}
	obj.Status.LastAppliedRevision = art.Revision
	obj.Status.LastAppliedOriginRevision = art.Metadata["org.opencontainers.image.revision"]
	return nil
}

func sortedEntries(m map[string]kustomizev1.ResourceRef) []kustomizev1.ResourceRef {
	out := make([]kustomizev1.ResourceRef, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// source resolves spec.sourceRef to the artifact of a GitRepository or
// an OCIRepository (the source kinds Eddy serves); any other kind stalls
// with ArtifactFailed. A missing source or artifact is waited for at
// --requeue-dependency, with Flux's messages.
func (r *KustomizationReconciler) source(ctx context.Context, obj *kustomizev1.Kustomization) (client.Object, *meta.Artifact, *failure) {
	ref := obj.Spec.SourceRef
	ns := ref.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	id := fmt.Sprintf("%s/%s/%s", ref.Kind, ns, ref.Name)
	if r.NoCrossNamespaceRefs && ns != obj.Namespace {
		f := fail(kustomizev1.AccessDeniedReason, "can't access '%s', cross-namespace references have been blocked", id)
		f.Stalled = true
		return nil, nil, f
	}
	var (
		src      client.Object
		artifact func() *meta.Artifact
	)
	switch ref.Kind {
	case sourcev1.GitRepositoryKind:
		o := &sourcev1.GitRepository{}
		src, artifact = o, func() *meta.Artifact { return o.Status.Artifact }
	case sourcev1.OCIRepositoryKind:
		o := &sourcev1.OCIRepository{}
		src, artifact = o, func() *meta.Artifact { return o.Status.Artifact }
	default:
		f := fail(meta.ArtifactFailedReason, "source kind '%s' is not supported by Eddy yet", ref.Kind)
		f.Stalled = true
		return nil, nil, f
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, src); err != nil {
		f := fail(meta.ArtifactFailedReason, "Source '%s' not found", id)
		if !apierrors.IsNotFound(err) {
			f.Message = fmt.Sprintf("Source '%s' could not be read: %s", id, err)
		}
		f.Retry, f.Waiting = r.RequeueDependency, true
		return nil, nil, f
	}
	art := artifact()
	if art == nil {
		f := fail(meta.ArtifactFailedReason, "Source '%s' is not ready, artifact not found", id)
		f.Retry, f.Waiting = r.RequeueDependency, true
		return src, nil, f
	}
	return src, art, nil
}

// checkDependencies evaluates spec.dependsOn (reconcile.Dependencies): a
// dependency sharing obj's source must also have applied revision.
func (r *KustomizationReconciler) checkDependencies(ctx context.Context, obj *kustomizev1.Kustomization, revision string) *failure {
	return reconcile.Dependencies[*kustomizev1.Kustomization]{
		Reader: r.APIReader,
		New:    func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
		UpToDate: func(dep *kustomizev1.Kustomization) string {
			same := dep.Spec.SourceRef.Kind == obj.Spec.SourceRef.Kind && dep.Spec.SourceRef.Name == obj.Spec.SourceRef.Name &&
				nsOr(dep.Spec.SourceRef.Namespace, dep.Namespace) == nsOr(obj.Spec.SourceRef.Namespace, obj.Namespace)
			if same && dep.Status.LastAppliedRevision != revision {
				return "revision is not up to date"
			}
			return ""
		},
		Retry:       r.RequeueDependency,
		AdditiveCEL: r.AdditiveCELDependencyCheck,
	}.Check(ctx, obj, obj.Spec.DependsOn)
}

func nsOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}

// buildOptions gathers the spec's overlays and postBuild variables
// (kustomize.Variables: substituteFrom in order, then substitute), and the
// values read from Secrets, masked in apply errors.
func (r *KustomizationReconciler) buildOptions(ctx context.Context, obj *kustomizev1.Kustomization) (kustomize.Options, []string, *failure) {
	vars, secrets, err := kustomize.VariablesAndSecrets(ctx, r, obj)
	if err != nil {
		return kustomize.SpecOptions(obj, nil, r.NonStrictSubstitutions), nil, fail(meta.BuildFailedReason, "%s", err)
	}
	return kustomize.SpecOptions(obj, vars, r.NonStrictSubstitutions), secrets, nil
}

// refuseEncrypted fails a set holding a SOPS-encrypted Secret when
// spec.decryption is not set, unless the Secret is annotated
// kustomize.toolkit.fluxcd.io/decrypt: disabled. Flux compatible message
// and reason (the apply fails, nothing is applied).
func refuseEncrypted(objs []*unstructured.Unstructured) *failure {
	for _, u := range objs {
		if u.GetKind() != "Secret" || u.GetAPIVersion() != "v1" {
			continue
		}
		if !kustomize.SOPSEncrypted(u.Object) || strings.EqualFold(u.GetAnnotations()[decryptor.DisabledAnnotation], kustomizev1.DisabledValue) {
			continue
		}
		return fail(meta.ReconciliationFailedReason, "%s is SOPS encrypted, configuring decryption is required for this secret to be reconciled", ssa.MetaOf(u))
	}
	return nil
}

// serviceAccount is the account impersonated for obj: spec.serviceAccountName,
// else --default-service-account; "" for the controller's own.
func (r *KustomizationReconciler) serviceAccount(obj *kustomizev1.Kustomization) string {
	if sa := obj.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return r.DefaultServiceAccount
}

// clientFor returns the client that applies, prunes, corrects drift and
// checks health: the remote cluster's of spec.kubeConfig.secretRef (cached,
// see remoteClients) when set, else this cluster's; impersonating
// spec.serviceAccountName (or the default) when set, on the remote cluster
// when there is one. A remote cluster must answer first. Flux compatible
// (pkg/runtime/client Impersonator).
func (r *KustomizationReconciler) clientFor(ctx context.Context, obj *kustomizev1.Kustomization) (client.Client, error) {
	impersonate := ""
	if sa := r.serviceAccount(obj); sa != "" {
		impersonate = fmt.Sprintf("system:serviceaccount:%s:%s", obj.Namespace, sa)
	}
	if kc := obj.Spec.KubeConfig; kc != nil {
		if kc.SecretRef == nil {
			return nil, errors.New("spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet; use spec.kubeConfig.secretRef")
		}
		data, err := kubeConfigData(ctx, r.Client, obj.Namespace, kc)
		if err != nil {
			return nil, err
		}
		rc, err := r.remotes.get(r, obj.Namespace, kc, data, impersonate)
		if err != nil {
			return nil, err
		}
		if err := rc.probe(ctx, obj.Namespace+"/"+kc.SecretRef.Name); err != nil {
			return nil, err
		}
		return rc.client, nil
	}
	if impersonate == "" || r.Config == nil {
		return r.Client, nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate}
	return client.New(cfg, client.Options{Scheme: r.Scheme(), Mapper: r.RESTMapper()})
}
