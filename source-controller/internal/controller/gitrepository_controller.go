// Package controller holds source-controller's reconcilers.
package controller

import (
	"context"
	"errors"
	"fmt"
	"os"

	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
	eddyruntime "github.com/eddyops/eddy/pkg/runtime"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// GitRepositoryReconciler turns GitRepository objects into artifacts: it
// lists the remote's refs, clones only when the wanted commit or the content
// configuration differs from the stored artifact, archives the checkout and
// records the artifact in status. Flux compatible: conditions, reasons,
// messages and events of source-controller (contract §1.1, §2, §3).
type GitRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	Events  *events.Recorder
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
	// RequeueDependency is the wait before retrying a GitRepository whose
	// include has no artifact yet; 0 means Flux's 30s. A new artifact of
	// the included GitRepository retries it at once anyway.
	RequeueDependency time.Duration
}

// Options of SetupWithManager.
type Options struct {
	Concurrent         int
	MinRetry, MaxRetry time.Duration
}

// SetupWithManager registers the reconciler: it reconciles on creation,
// spec change and reconcile request (not on its own status updates), with
// exponential back-off between MinRetry and MaxRetry after errors.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, o Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sourcev1.GitRepository{}, includeIndex,
		func(o client.Object) []string { return indexIncludes(o.(*sourcev1.GitRepository)) }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(eddyruntime.ReconcileOnChange())).
		// A new artifact of an included GitRepository rebuilds the includers.
		Watches(&sourcev1.GitRepository{}, handler.EnqueueRequestsFromMapFunc(r.includers),
			builder.WithPredicates(artifactChanged{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: o.Concurrent,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.MinRetry, o.MaxRetry),
		}).
		Complete(r)
}

// includers lists the GitRepositories that include obj.
func (r *GitRepositoryReconciler) includers(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &sourcev1.GitRepositoryList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{includeIndex: obj.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, o := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&o)})
	}
	return reqs
}

// artifactChanged passes updates that change status.artifact's revision or digest.
type artifactChanged struct{ predicate.Funcs }

func (artifactChanged) Create(event.CreateEvent) bool   { return false }
func (artifactChanged) Delete(event.DeleteEvent) bool   { return false }
func (artifactChanged) Generic(event.GenericEvent) bool { return false }
func (artifactChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*sourcev1.GitRepository)
	n, ok2 := e.ObjectNew.(*sourcev1.GitRepository)
	if !ok1 || !ok2 || n.Status.Artifact == nil {
		return false
	}
	return o.Status.Artifact == nil || o.Status.Artifact.Revision != n.Status.Artifact.Revision ||
		o.Status.Artifact.Digest != n.Status.Artifact.Digest
}

// reconcileError is a failed step: the condition to set, its reason and a
// stable message, and whether retrying can help.
type reconcileError struct {
	condition string // FetchFailed or StorageOperationFailed
	reason    string
	message   string
	stalled   bool
	// waiting marks a wait for another object (an include without an
	// artifact yet): a Trace event, no alert. Flux compatible (serror.Waiting).
	waiting bool
}

func (e *reconcileError) Error() string { return e.message }

func fetchFailed(reason, format string, args ...any) *reconcileError {
	return &reconcileError{condition: sourcev1.FetchFailedCondition, reason: reason, message: fmt.Sprintf(format, args...)}
}

// Reconcile brings one GitRepository's artifact up to date.
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	obj := &sourcev1.GitRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	objDir := artifact.ObjectDir(sourcev1.GitRepositoryKind, obj.Namespace, obj.Name)
	defer eddyruntime.RecordDuration(sourcev1.GitRepositoryKind, obj.Namespace, obj.Name, start)

	if !obj.DeletionTimestamp.IsZero() {
		if err := r.Storage.RemoveObject(objDir); err != nil {
			return ctrl.Result{}, fmt.Errorf("removing artifacts: %w", err)
		}
		base := obj.DeepCopy()
		if controllerutil.RemoveFinalizer(obj, sourcev1.SourceFinalizer) {
			if err := r.Patch(ctx, obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
		}
		log.Info("artifacts removed, object released")
		return ctrl.Result{}, nil
	}
	// A patch, not an update: re-encoding the spec would rewrite durations
	// ("60s" as "1m0s") and bump the generation.
	if base := obj.DeepCopy(); controllerutil.AddFinalizer(obj, sourcev1.SourceFinalizer) {
		if err := r.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if obj.Spec.Suspend {
		log.Info("reconciliation is suspended for this object")
		return ctrl.Result{}, r.observeSuspended(ctx, obj)
	}

	base := obj.DeepCopy()
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	recErr := r.reconcile(ctx, obj, objDir, wasReady)
	if v, ok := obj.Annotations[meta.ReconcileRequestAnnotation]; ok {
		obj.Status.LastHandledReconcileAt = v
	}
	r.summarize(obj, recErr)
	if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return ctrl.Result{}, fmt.Errorf("patching status: %w", err)
	}

	switch {
	case recErr == nil:
		next := eddyruntime.Jitter(obj.Spec.Interval.Duration, r.JitterPercent)
		log.Info(fmt.Sprintf("stored artifact for revision '%s'", obj.Status.Artifact.Revision),
			"duration", time.Since(start).String(), "next", next.String())
		return ctrl.Result{RequeueAfter: next}, nil
	case recErr.stalled:
		log.Error(recErr, "reconciliation stalled")
		return ctrl.Result{}, nil
	case recErr.waiting:
		wait := r.RequeueDependency
		if wait <= 0 {
			wait = 30 * time.Second
		}
		log.Info("reconciliation waiting", "reason", recErr.message, "duration", wait.String())
		return ctrl.Result{RequeueAfter: wait}, nil
	default:
		return ctrl.Result{}, recErr
	}
}

// observeSuspended records what a reconcile of a suspended GitRepository
// observes, and nothing else (no event, no fetch): the handled reconcile
// request and, once it has conditions, its generation, so kstatus and
// `kubectl wait` read a suspended GitRepository as observed. Ready keeps its
// status and message at the new generation, Stalled is dropped, Reconciling
// becomes ProgressingWithRetry. Flux compatible (summarize with an empty
// result: ComputeReconcileResult, WithStatusObservedGeneration).
func (r *GitRepositoryReconciler) observeSuspended(ctx context.Context, obj *sourcev1.GitRepository) error {
	base := obj.DeepCopy()
	if v, ok := obj.Annotations[meta.ReconcileRequestAnnotation]; ok {
		obj.Status.LastHandledReconcileAt = v
	}
	if len(obj.Status.Conditions) > 0 {
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.StalledCondition)
		for _, typ := range []string{meta.ReconcilingCondition, meta.ReadyCondition} {
			if c := apimeta.FindStatusCondition(obj.Status.Conditions, typ); c != nil {
				c.ObservedGeneration = obj.Generation
				if typ == meta.ReconcilingCondition {
					c.Reason = meta.ProgressingWithRetryReason
				}
			}
		}
		obj.Status.ObservedGeneration = obj.Generation
	}
	if equality.Semantic.DeepEqual(base.Status, obj.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	return nil
}

// reconcile runs the storage, source and artifact steps; it records
// observations in obj.Status and returns the first failure.
func (r *GitRepositoryReconciler) reconcile(ctx context.Context, obj *sourcev1.GitRepository, objDir string, wasReady bool) *reconcileError {
	r.reconcileStorage(obj)

	u, err := parseURL(obj.Spec.URL)
	if err != nil {
		e := fetchFailed(sourcev1.URLInvalidReason, "%s", err)
		e.stalled = true
		return e
	}
	if obj.Spec.Verification != nil {
		// Refuse rather than ignore: an unverified artifact must not pass for a verified one.
		e := &reconcileError{condition: sourcev1.SourceVerifiedCondition, reason: sourcev1.VerificationErrorReason,
			message: "commit signature verification (spec.verify) is not supported by Eddy yet"}
		e.stalled = true
		return e
	}
	switch obj.Spec.Provider {
	case "", sourcev1.GitProviderGeneric:
	default:
		e := fetchFailed(sourcev1.InvalidProviderConfigReason, "provider '%s' is not supported: use 'generic' with spec.secretRef", obj.Spec.Provider)
		e.stalled = true
		return e
	}
	var data map[string][]byte
	if ref := obj.Spec.SecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, secret); err != nil {
			return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get secret '%s/%s': %s", obj.Namespace, ref.Name, err)
		}
		data = secret.Data
	}
	auth, err := newGitAuth(u, data)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	if ref := obj.Spec.ProxySecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, secret); err != nil {
			return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure proxy options: failed to get secret '%s/%s': %s", obj.Namespace, ref.Name, err)
		}
		if auth.proxy, err = proxyOptions(secret.Data); err != nil {
			return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure proxy options: %s", err)
		}
	}

	timeout := 60 * time.Second
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Resolve the wanted commit with one ref listing; a commit without branch
	// needs none.
	var refs map[string]string
	if ref := obj.Spec.Reference; ref == nil || ref.Commit == "" || ref.Branch != "" {
		if err = bounded(ctx, u, "", func() (e error) { refs, e = listRemote(ctx, obj.Spec.URL, auth); return e }); err != nil {
			return gitError(err, obj.Spec.URL, "")
		}
	}
	tgt, err := resolveTarget(obj.Spec.Reference, refs)
	if err != nil {
		return gitError(err, obj.Spec.URL, "")
	}
	included, incErr := r.includedArtifacts(ctx, obj)
	if incErr != nil {
		return incErr
	}
	if cur := obj.Status.Artifact; cur != nil && tgt.hash != "" && cur.Revision == tgt.revision(tgt.hash) &&
		!contentConfigChanged(obj) && !includesChanged(included, obj.Status.IncludedArtifacts) {
		if !wasReady { // recovered without needing a new artifact
			r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason,
				fmt.Sprintf("stored artifact for revision '%s'", cur.Revision), map[string]string{
					sourcev1.GroupVersion.Group + "/revision": cur.Revision,
					sourcev1.GroupVersion.Group + "/digest":   cur.Digest,
				})
		}
		return nil // up to date: no clone
	}

	// Flux compatible: a known newer revision or include change marks the
	// stored artifact outdated until the new one is stored.
	if cur := obj.Status.Artifact; cur != nil {
		reason, msg := "", ""
		switch {
		case tgt.hash != "" && cur.Revision != tgt.revision(tgt.hash):
			reason, msg = sourcev1.NewRevisionReason, fmt.Sprintf("new upstream revision '%s'", tgt.revision(tgt.hash))
		case includesChanged(included, obj.Status.IncludedArtifacts):
			reason, msg = sourcev1.IncludeChangeReason, "included artifacts differ from last observed includes"
		}
		if reason != "" {
			apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: sourcev1.ArtifactOutdatedCondition,
				Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: obj.Generation})
		}
	}
	dir, err := os.MkdirTemp("", "gitrepository-")
	if err != nil {
		return &reconcileError{condition: sourcev1.StorageOperationFailedCondition, reason: sourcev1.DirCreationFailedReason,
			message: "failed to create a temporary working directory"}
	}
	defer removeWorkDir(dir)
	var commit *object.Commit
	err = bounded(ctx, u, dir, func() (e error) {
		commit, e = checkout(ctx, dir, obj.Spec.URL, auth, tgt, obj.Spec.RecurseSubmodules, obj.Spec.SparseCheckout)
		return e
	})
	if err != nil {
		return gitError(err, obj.Spec.URL, dir)
	}
	rev := tgt.revision(commit.Hash.String())
	if e := r.copyIncludes(obj, included, dir); e != nil {
		return e
	}

	ignore, err := artifact.LoadIgnore(dir, obj.Spec.Ignore)
	if err != nil {
		return &reconcileError{condition: sourcev1.StorageOperationFailedCondition, reason: sourcev1.SourceIgnoreErrorReason,
			message: "failed to load source ignore rules: " + strings.ReplaceAll(err.Error(), dir, ".")}
	}
	art, err := r.Storage.Archive(objDir, artifact.FileName(rev), rev, dir, ignore)
	if err != nil {
		return &reconcileError{condition: sourcev1.StorageOperationFailedCondition, reason: sourcev1.ArchiveOperationFailedReason,
			message: "failed to archive the checkout: " + strings.ReplaceAll(err.Error(), dir, ".")}
	}
	prev := obj.Status.Artifact
	obj.Status.Artifact = art
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedRecurseSubmodules = obj.Spec.RecurseSubmodules
	obj.Status.ObservedSparseCheckout = obj.Spec.SparseCheckout
	obj.Status.ObservedInclude = obj.Spec.Include
	obj.Status.IncludedArtifacts = included
	if _, err := r.Storage.GarbageCollect(*art); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage collection of old artifacts failed")
	}

	msg := fmt.Sprintf("stored artifact for commit '%s'", commitSubject(commit.Message))
	annotations := map[string]string{
		sourcev1.GroupVersion.Group + "/revision": art.Revision,
		sourcev1.GroupVersion.Group + "/digest":   art.Digest,
	}
	switch {
	case prev == nil || prev.Revision != art.Revision || prev.Digest != art.Digest:
		r.Events.Event(obj, corev1.EventTypeNormal, "NewArtifact", msg, annotations)
	case !wasReady:
		r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg, annotations)
	}
	return nil
}

// reconcileStorage drops a status artifact whose file is gone or no longer
// matches its digest, collects old artifacts and refreshes the URL.
func (r *GitRepositoryReconciler) reconcileStorage(obj *sourcev1.GitRepository) {
	cur := obj.Status.Artifact
	if cur == nil {
		return
	}
	if !r.Storage.Exists(*cur) {
		obj.Status.Artifact = nil
		return
	}
	if err := r.Storage.Verify(*cur); err != nil {
		r.Events.Event(obj, corev1.EventTypeWarning, "ArtifactVerificationFailed",
			fmt.Sprintf("failed to verify integrity of artifact: %s", strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", "")), nil)
		_ = r.Storage.Remove(*cur)
		obj.Status.Artifact = nil
		return
	}
	if deleted, err := r.Storage.GarbageCollect(*cur); err == nil && len(deleted) > 0 {
		r.Events.Event(obj, events.EventTypeTrace, "GarbageCollectionSucceeded",
			fmt.Sprintf("garbage collected %d artifacts", len(deleted)), nil)
	}
	cur.URL = r.Storage.URL(cur.Path)
}

// contentConfigChanged reports whether spec fields that shape the artifact
// differ from those its status says it was built with.
func contentConfigChanged(obj *sourcev1.GitRepository) bool {
	s := obj.Status
	return !equalStringPtr(obj.Spec.Ignore, s.ObservedIgnore) ||
		obj.Spec.RecurseSubmodules != s.ObservedRecurseSubmodules ||
		!equalStrings(obj.Spec.SparseCheckout, s.ObservedSparseCheckout) ||
		!equality.Semantic.DeepEqual(normalize(obj.Spec.Include), normalize(s.ObservedInclude))
}

func normalize(incs []sourcev1.GitRepositoryInclude) []sourcev1.GitRepositoryInclude {
	if len(incs) == 0 {
		return nil
	}
	return incs
}

// summarize writes the conditions for the outcome. Flux compatible: Ready
// mirrors ArtifactInStorage on success and the failing condition otherwise;
// Reconciling stays True with ProgressingWithRetry while retrying; Stalled is
// set when only a spec change can help.
func (r *GitRepositoryReconciler) summarize(obj *sourcev1.GitRepository, recErr *reconcileError) {
	gen := obj.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
	del := func(types ...string) {
		for _, t := range types {
			apimeta.RemoveStatusCondition(&obj.Status.Conditions, t)
		}
	}
	if art := obj.Status.Artifact; art != nil {
		set(sourcev1.ArtifactInStorageCondition, metav1.ConditionTrue, meta.SucceededReason,
			fmt.Sprintf("stored artifact for revision '%s'", art.Revision))
	} else {
		del(sourcev1.ArtifactInStorageCondition)
	}
	if recErr == nil {
		del(sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition, sourcev1.ArtifactOutdatedCondition,
			sourcev1.IncludeUnavailableCondition, sourcev1.SourceVerifiedCondition, meta.ReconcilingCondition, meta.StalledCondition)
		set(meta.ReadyCondition, metav1.ConditionTrue, meta.SucceededReason,
			fmt.Sprintf("stored artifact for revision '%s'", obj.Status.Artifact.Revision))
		obj.Status.ObservedGeneration = gen
		return
	}
	del(sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition, sourcev1.IncludeUnavailableCondition,
		sourcev1.SourceVerifiedCondition)
	status := metav1.ConditionTrue // the failure conditions are abnormal-true
	if recErr.condition == sourcev1.SourceVerifiedCondition {
		status = metav1.ConditionFalse // SourceVerified is bi-polar
	}
	set(recErr.condition, status, recErr.reason, recErr.message)
	set(meta.ReadyCondition, metav1.ConditionFalse, recErr.reason, recErr.message)
	if recErr.stalled {
		del(meta.ReconcilingCondition)
		set(meta.StalledCondition, metav1.ConditionTrue, recErr.reason, recErr.message)
		obj.Status.ObservedGeneration = gen
	} else {
		del(meta.StalledCondition)
		set(meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, recErr.message)
	}
	eventType := corev1.EventTypeWarning
	if recErr.waiting {
		eventType = events.EventTypeTrace
	}
	r.Events.Event(obj, eventType, recErr.reason, recErr.message, nil)
}

// gitError maps a fetch failure to the condition Flux sets for it. dir, the
// checkout directory, is removed from messages so they stay stable.
func gitError(err error, rawURL, dir string) *reconcileError {
	var stalling errStalling
	switch {
	case errors.Is(err, errEmptyRepository):
		return fetchFailed(sourcev1.EmptyGitRepositoryReason, "%s", errEmptyRepository)
	case errors.As(err, &stalling):
		e := fetchFailed(sourcev1.GitOperationFailedReason, "failed to checkout and determine revision: %s", stalling.error)
		e.stalled = true
		return e
	}
	msg := describeGitError(err, rawURL)
	if dir != "" {
		msg = strings.ReplaceAll(msg, dir, ".")
	}
	return fetchFailed(sourcev1.GitOperationFailedReason, "failed to checkout and determine revision: unable to clone '%s': %s", redact.URL(rawURL), msg)
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
