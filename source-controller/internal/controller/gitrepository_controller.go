// Package controller holds source-controller's reconcilers.
package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/gitauth"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// GitRepositoryReconciler turns GitRepository objects into artifacts: it
// lists the remote's refs, clones only when the wanted commit or the content
// configuration differs from the stored artifact, archives the checkout and
// records the artifact in status. Flux compatible: conditions, reasons,
// messages and events of source-controller (contract §1.1, §2, §3).
type GitRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Signer signs the artifacts written to the status; nil signs none.
	Signer *Signer
	Events *events.Recorder
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
	// RequeueDependency is the wait before retrying a GitRepository whose
	// include has no artifact yet; 0 means Flux's 30s. A new artifact of
	// the included GitRepository retries it at once anyway.
	RequeueDependency time.Duration
}

// SetupWithManager registers the reconciler with the work-queue options
// opts (controllerkit.Options.ControllerOptions): it reconciles on creation, spec
// change and reconcile request (not on its own status updates), and the
// GitRepositories including one whose artifact changed.
func (r *GitRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sourcev1.GitRepository{}, includeIndex,
		func(o client.Object) []string { return indexIncludes(o.(*sourcev1.GitRepository)) }); err != nil {
		return err
	}
	includers := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &sourcev1.GitRepositoryList{} },
		func(inc client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(inc.GetNamespace()), client.MatchingFields{includeIndex: inc.GetName()}}
		})
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		// A new artifact of an included GitRepository rebuilds the includers.
		Watches(&sourcev1.GitRepository{}, includers, builder.WithPredicates(controllerkit.ArtifactChanged{})).
		WithOptions(opts).
		Complete(r)
}

// fetchFailed is a failure of condition FetchFailed.
func fetchFailed(reason, format string, args ...any) *reconciler.Failure {
	f := reconciler.Fail(reason, format, args...)
	f.Condition = sourcev1.FetchFailedCondition
	return f
}

// Reconcile brings one GitRepository's artifact up to date. The skeleton
// (pkg/reconciler) runs the finalizer and suspend prologue and writes the
// status last; run does the rest.
func (r *GitRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := sourceSkeleton(r.Client, r.Storage, sourcev1.GitRepositoryKind, func(obj *sourcev1.GitRepository) bool { return obj.Spec.Suspend })
	return skel.Reconcile(ctx, req, &sourcev1.GitRepository{}, r.run)
}

// run reconciles a live, unsuspended GitRepository and summarizes the
// outcome in its status. A wait is requeued after RequeueDependency; any
// other failure is returned, retried with the work queue's back-off unless
// stalled.
func (r *GitRepositoryReconciler) run(ctx context.Context, obj *sourcev1.GitRepository, _ *reconciler.StatusPatcher) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	objDir := artifact.ObjectDir(sourcev1.GitRepositoryKind, obj.Namespace, obj.Name)
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	if err := r.Signer.ready(ctx); err != nil {
		return ctrl.Result{}, err
	}
	recErr := r.reconcile(ctx, obj, objDir, wasReady)
	r.summarize(obj, recErr)
	var done string
	if recErr == nil {
		done = fmt.Sprintf("stored artifact for revision '%s'", obj.Status.Artifact.Revision)
	}
	return outcome(log, start, recErr, done, controllerkit.Jitter(obj.Spec.Interval.Duration, r.JitterPercent), r.RequeueDependency)
}

// outcome is the result of a source reconcile: on success (recErr nil) log
// done and come back after next; a wait comes back after requeueDependency
// (0: Flux's 30s); any other failure is returned, retried with the work
// queue's back-off unless stalled.
func outcome(log logr.Logger, start time.Time, recErr *reconciler.Failure, done string, next, requeueDependency time.Duration) (ctrl.Result, error) {
	switch {
	case recErr == nil:
		log.Info(done, "duration", time.Since(start).String(), "next", next.String())
		return ctrl.Result{RequeueAfter: next}, nil
	case recErr.Waiting && !recErr.Stalled:
		wait := requeueDependency
		if wait <= 0 {
			wait = 30 * time.Second
		}
		log.Info("reconciliation waiting", "reason", recErr.Message, "duration", wait.String())
		return ctrl.Result{RequeueAfter: wait}, nil
	default:
		return ctrl.Result{}, recErr
	}
}

// reconcile runs the storage, source and artifact steps; it records
// observations in obj.Status and returns the first failure.
func (r *GitRepositoryReconciler) reconcile(ctx context.Context, obj *sourcev1.GitRepository, objDir string, wasReady bool) *reconciler.Failure {
	r.reconcileStorage(ctx, obj)
	prepareVerification(obj)
	u, auth, f := r.gitAuth(ctx, obj)
	if f != nil {
		return f
	}
	timeout := 60 * time.Second
	if obj.Spec.Timeout != nil {
		timeout = obj.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Resolve the wanted commit with one ref listing; a commit without branch
	// needs none. Over HTTP(S) the listing's session is kept for the fetch
	// (remoteSession); SSH keeps bounded's separate, abandonable steps.
	var refs map[string]string
	var sess *remoteSession
	if ref := obj.Spec.Reference; ref == nil || ref.Commit == "" || ref.Branch != "" {
		err := bounded(ctx, u, "", func() (e error) {
			if u.Scheme == "http" || u.Scheme == "https" {
				sess, refs, e = openSession(ctx, obj.Spec.URL, auth)
				return e
			}
			refs, e = listRemote(ctx, obj.Spec.URL, auth)
			return e
		})
		if err != nil {
			return gitError(err, obj.Spec.URL, "")
		}
		defer sess.Close()
	}
	tgt, err := resolveTarget(obj.Spec.Reference, refs)
	if err != nil {
		return gitError(err, obj.Spec.URL, "")
	}
	included, incErr := r.includedArtifacts(ctx, obj)
	if incErr != nil {
		return incErr
	}
	if cur := obj.Status.Artifact; cur != nil && tgt.current(cur.Revision) && !requiresVerification(obj) &&
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

	markOutdated(obj, tgt, included)
	dir, err := os.MkdirTemp("", "gitrepository-")
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.DirCreationFailedReason,
			Message: "failed to create a temporary working directory"}
	}
	// Removed beside the status write, not before it: removing a checkout
	// took 5-130 ms on a busy machine, on the way from a push to its
	// artifact. A crash's leftovers are purged at start (PrepareWorkDir).
	defer func() { go removeWorkDir(dir) }()
	var commit *object.Commit
	var tag *object.Tag
	err = bounded(ctx, u, dir, func() (e error) {
		commit, tag, e = checkout(ctx, dir, obj.Spec.URL, auth, tgt, obj.Spec.RecurseSubmodules, obj.Spec.SparseCheckout, sess, refs)
		return e
	})
	if err != nil {
		return gitError(err, obj.Spec.URL, dir)
	}
	if f := r.verifySignatures(ctx, obj, tgt.refName, tag, commit); f != nil {
		// Nothing unverified is stored; the served artifact stays, not
		// marked outdated (Flux compatible).
		reconciler.RemoveConditions(obj, sourcev1.ArtifactOutdatedCondition)
		return f
	}
	rev := tgt.revision(commit.Hash.String())
	if e := r.copyIncludes(obj, included, dir); e != nil {
		return e
	}

	return r.store(ctx, obj, objDir, dir, rev, commit, included, wasReady)
}

// gitAuth parses spec.url and reads the credentials and proxy of
// spec.secretRef and spec.proxySecretRef, with spec.provider's token
// (gitprovider.go); an invalid URL and a provider Eddy does not build
// stall.
func (r *GitRepositoryReconciler) gitAuth(ctx context.Context, obj *sourcev1.GitRepository) (*url.URL, *gitAuth, *reconciler.Failure) {
	u, err := parseURL(obj.Spec.URL)
	if err != nil {
		e := fetchFailed(sourcev1.URLInvalidReason, "%s", err)
		e.Stalled = true
		return nil, nil, e
	}
	if f := checkGitProvider(obj); f != nil {
		return nil, nil, f
	}
	var data map[string][]byte
	if ref := obj.Spec.SecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, secret); err != nil {
			return nil, nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get secret '%s/%s': %s", obj.Namespace, ref.Name, err)
		}
		data = secret.Data
	}
	auth, err := gitauth.FromSecret(u, data)
	if err != nil {
		return nil, nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	if ref := obj.Spec.ProxySecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, secret); err != nil {
			return nil, nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure proxy options: failed to get secret '%s/%s': %s", obj.Namespace, ref.Name, err)
		}
		if auth.Proxy, err = gitauth.Proxy(secret.Data); err != nil {
			return nil, nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure proxy options: %s", err)
		}
	}
	if f := providerAuth(ctx, obj, data, auth); f != nil {
		return nil, nil, f
	}
	return u, auth, nil
}

// markOutdated marks the stored artifact outdated (ArtifactOutdated) when
// tgt is a newer revision or the includes changed, until the new one is
// stored. Flux compatible.
func markOutdated(obj *sourcev1.GitRepository, tgt target, included []*meta.Artifact) {
	cur := obj.Status.Artifact
	if cur == nil {
		return
	}
	reason, msg := "", ""
	switch {
	case tgt.hash != "" && !tgt.current(cur.Revision):
		reason, msg = sourcev1.NewRevisionReason, fmt.Sprintf("new upstream revision '%s'", tgt.revision(tgt.hash))
	case includesChanged(included, obj.Status.IncludedArtifacts):
		reason, msg = sourcev1.IncludeChangeReason, "included artifacts differ from last observed includes"
	}
	if reason != "" {
		apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: sourcev1.ArtifactOutdatedCondition,
			Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: obj.Generation})
	}
}

// store archives the checkout in dir as the artifact of rev, records it
// with what it observed of the spec, and emits NewArtifact (or, for a
// recovery, Succeeded).
func (r *GitRepositoryReconciler) store(ctx context.Context, obj *sourcev1.GitRepository, objDir, dir, rev string, commit *object.Commit,
	included []*meta.Artifact, wasReady bool) *reconciler.Failure {
	ignore, err := artifact.LoadIgnore(dir, obj.Spec.Ignore)
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.SourceIgnoreErrorReason,
			Message: "failed to load source ignore rules: " + strings.ReplaceAll(err.Error(), dir, ".")}
	}
	follow := followSymlinks(obj)
	art, err := r.Storage.ArchiveWith(objDir, artifact.FileName(rev), rev, dir,
		artifact.TarOptions{Exclude: ignore.Match, FollowSymlinks: follow})
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
			Message: "failed to archive the checkout: " + strings.ReplaceAll(err.Error(), dir, ".")}
	}
	if follow {
		art.Metadata = map[string]string{sourcev1.SymlinksAnnotation: sourcev1.SymlinksFollow}
	}
	prev := obj.Status.Artifact
	r.Signer.sign(sourcev1.GitRepositoryKind, obj, art)
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

// reconcileStorage drops a status artifact this controller did not sign
// (Signer.published) or whose file is gone or no longer matches its
// digest, collects old artifacts and refreshes the URL.
func (r *GitRepositoryReconciler) reconcileStorage(ctx context.Context, obj *sourcev1.GitRepository) {
	obj.Status.Artifact = checkStoredArtifact(r.Storage, r.Events, obj, sourcev1.GitRepositoryKind,
		r.Signer.published(ctx, sourcev1.GitRepositoryKind, obj, obj.Status.Artifact))
	r.Signer.sign(sourcev1.GitRepositoryKind, obj, obj.Status.Artifact)
}

// contentConfigChanged reports whether spec fields that shape the artifact
// differ from those its status says it was built with.
func contentConfigChanged(obj *sourcev1.GitRepository) bool {
	s := obj.Status
	return !equalStringPtr(obj.Spec.Ignore, s.ObservedIgnore) ||
		obj.Spec.RecurseSubmodules != s.ObservedRecurseSubmodules ||
		!equalStrings(obj.Spec.SparseCheckout, s.ObservedSparseCheckout) ||
		!equality.Semantic.DeepEqual(normalize(obj.Spec.Include), normalize(s.ObservedInclude)) ||
		(s.Artifact != nil && followSymlinks(obj) != (s.Artifact.Metadata[sourcev1.SymlinksAnnotation] == sourcev1.SymlinksFollow))
}

// followSymlinks reports whether obj asks for its links to be followed
// (sourcev1.SymlinksAnnotation, beyond Flux); the artifact built so
// records it in its metadata, so a change of the annotation rebuilds it.
func followSymlinks(obj *sourcev1.GitRepository) bool {
	return obj.GetAnnotations()[sourcev1.SymlinksAnnotation] == sourcev1.SymlinksFollow
}

func normalize(incs []sourcev1.GitRepositoryInclude) []sourcev1.GitRepositoryInclude {
	if len(incs) == 0 {
		return nil
	}
	return incs
}

// summarize writes the conditions for the outcome (summarizeSource), with
// the GitRepository's artifact message and failure conditions.
// SourceVerified is not among them: a success stays while its artifact is
// served (prepareVerification).
func (r *GitRepositoryReconciler) summarize(obj *sourcev1.GitRepository, recErr *reconciler.Failure) {
	summarizeSource(obj, r.Events, obj.Status.Artifact, "stored artifact for revision '%s'", recErr,
		sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition,
		sourcev1.IncludeUnavailableCondition)
}

// gitError maps a fetch failure to the condition Flux sets for it. dir, the
// checkout directory, is removed from messages so they stay stable.
func gitError(err error, rawURL, dir string) *reconciler.Failure {
	var stalling errStalling
	switch {
	case errors.Is(err, errEmptyRepository):
		return fetchFailed(sourcev1.EmptyGitRepositoryReason, "%s", errEmptyRepository)
	case errors.As(err, &stalling):
		e := fetchFailed(sourcev1.GitOperationFailedReason, "failed to checkout and determine revision: %s", stalling.error)
		e.Stalled = true
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
