package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/gitauth"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/image-automation-controller/internal/source"
	"github.com/eddyops/eddy/image-automation-controller/internal/update"
	"github.com/eddyops/eddy/pkg/reconciler"
)

// defaultGitTimeout bounds a clone and a push when the GitRepository sets
// no spec.timeout (its default, Flux's).
const defaultGitTimeout = 60 * time.Second

// accessDeniedReason: a cross-namespace sourceRef with
// --no-cross-namespace-refs (Flux's acl AccessDeniedReason).
const accessDeniedReason = "AccessDenied"

// outcome is what automate did besides the status it wrote.
type outcome struct {
	// wait: policy changes are being batched (policyChangeDelay); run
	// again after it.
	wait time.Duration
	// pushed is the push event's message; "" when nothing was pushed.
	pushed string
	// skipped: neither the policies nor the remote branch moved since the
	// last run, so nothing was cloned.
	skipped bool
	// unapplied says which markers the update left alone and why (a file
	// that is not YAML, a policy that does not exist); "" when none.
	unapplied string
}

// applyError marks a failure of the file update, not of Git.
type applyError struct{ error }

// automate is the automation's work: validate the spec, read the policies,
// clone, update, commit and push, and record observedPolicies,
// observedSourceRevision, lastPushCommit and lastPushTime.
func (r *AutomationReconciler) automate(ctx context.Context, obj *imagev1.ImageUpdateAutomation) (outcome, *reconciler.Failure) {
	if f := validate(obj); f != nil {
		return outcome{}, f
	}
	policies, latest, f := r.policies(ctx, obj)
	if f != nil {
		return outcome{}, f
	}
	changed := policiesChanged(obj.Status.ObservedPolicies, policies)
	if wait := r.batchWait(obj, changed); wait > 0 {
		return outcome{wait: wait}, nil
	}
	repo, auth, f := r.source(ctx, obj)
	if f != nil {
		return outcome{}, f
	}
	gs := obj.Spec.GitSpec
	ref := checkoutRef(gs, repo)
	pushSpec, f := pushSpec(obj)
	if f != nil {
		return outcome{}, f
	}
	timeout := defaultGitTimeout
	if repo.Spec.Timeout != nil {
		timeout = repo.Spec.Timeout.Duration
	}
	// Nothing to do when neither the policies nor the remote branch moved
	// (Flux skips the clone the same way); another push branch or a
	// refspec always needs the full run (Flux: its head is not observed).
	if !changed && pushSpec.Branch == "" && pushSpec.Refspec == "" && ref.Branch != "" && ref.Commit == "" &&
		ref.Tag == "" && ref.SemVer == "" && ref.Name == "" && obj.Status.ObservedSourceRevision != "" {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		head, err := source.RemoteHead(lctx, repo.Spec.URL, auth, ref.Branch)
		cancel()
		if err == nil && obj.Status.ObservedSourceRevision == ref.Branch+"@sha1:"+head.String() {
			return outcome{skipped: true}, nil
		}
	}
	commit, f := r.commitSpec(ctx, obj)
	if f != nil {
		return outcome{}, f
	}
	dir, err := os.MkdirTemp("", "image-automation-")
	if err != nil {
		return outcome{}, reconciler.Fail(imagev1.SourceManagerFailedReason, "failed configuring source manager: %v", err)
	}
	defer os.RemoveAll(dir)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	co, err := source.Clone(cctx, repo.Spec.URL, auth, ref, dir)
	if err != nil {
		return outcome{}, reconciler.Fail(imagev1.GitOperationFailedReason, "failed to checkout source: %v", err)
	}
	if f := prBase(gs, co.Branch, pushSpec.Branch); f != nil {
		return outcome{}, f
	}
	path := ""
	if obj.Spec.Update != nil {
		path = obj.Spec.Update.Path
	}
	apply := func(dir string) (update.Result, error) {
		res, err := update.WithSetters(dir, path, latest)
		if err != nil {
			return res, applyError{err}
		}
		return res, nil
	}
	data := source.TemplateData{AutomationObject: client.ObjectKeyFromObject(obj), Values: gs.Commit.MessageTemplateValues}
	message := func(res update.Result) (string, error) {
		data.Changed = res
		return source.Message(gs.Commit.MessageTemplate, data)
	}
	uctx, cancel2 := context.WithTimeout(ctx, 2*timeout)
	defer cancel2()
	pushed, err := co.Update(uctx, apply, message, commit, pushSpec)
	if f := updateFailure(err); f != nil {
		return outcome{}, f
	}
	obj.Status.ObservedPolicies = policies
	obj.Status.ObservedSourceRevision = co.Revision()
	out := outcome{unapplied: describeUnapplied(pushed.Result)}
	if gs.HasPullRequest() {
		run := prRun{gitURL: repo.Spec.URL, base: co.Branch, head: pushSpec.Branch, updatePath: path,
			result: pushed.Result, message: pushed.Message}
		return r.recordPullRequest(ctx, obj, pushed, run, out)
	}
	if pushed.Commit == plumbing.ZeroHash {
		return out, nil
	}
	if pushed.Branch == co.Branch {
		obj.Status.ObservedSourceRevision = co.Branch + "@sha1:" + pushed.Commit.String()
	}
	r.recordPush(obj, pushed)
	msg := pushedMessage(pushed)
	if pushSpec.Refspec != "" {
		msg += fmt.Sprintf(" and refspecs '%s'", pushSpec.Refspec)
	}
	out.pushed = msg + "\n" + pushed.Message
	return out, nil
}

// recordPush sets Flux's lastPushCommit and lastPushTime.
func (r *AutomationReconciler) recordPush(obj *imagev1.ImageUpdateAutomation, pushed source.Outcome) {
	obj.Status.LastPushCommit = pushed.Commit.String()
	obj.Status.LastPushTime = &metav1.Time{Time: r.now()}
}

func pushedMessage(pushed source.Outcome) string {
	return fmt.Sprintf("pushed commit '%s' to branch '%s'", pushed.Commit.String()[:7], pushed.Branch)
}

// recordPullRequest is the end of a run with spec.git.push.pullRequest:
// the pull request follows the pushed (or kept) branch; with nothing to
// change, a pull request left open by an earlier run is closed.
func (r *AutomationReconciler) recordPullRequest(ctx context.Context, obj *imagev1.ImageUpdateAutomation,
	pushed source.Outcome, run prRun, out outcome) (outcome, *reconciler.Failure) {
	var lines []string
	switch {
	case pushed.Commit == plumbing.ZeroHash:
		if !prOpen(obj) {
			return out, nil
		}
		run.head = ""
	case !pushed.Kept:
		r.recordPush(obj, pushed)
		lines = append(lines, pushedMessage(pushed))
	}
	line, f := r.syncPullRequest(ctx, obj, run)
	if f != nil {
		return out, f
	}
	if line != "" {
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		out.pushed = strings.Join(lines, "\n")
		if !pushed.Kept && pushed.Commit != plumbing.ZeroHash {
			out.pushed += "\n" + pushed.Message
		}
	}
	return out, nil
}

// describeUnapplied lists the files and markers an update left alone, one
// per line (file paths relative to the update path): what Flux skips
// silently, Eddy says in a Warning event.
func describeUnapplied(res update.Result) string {
	var b strings.Builder
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "%s: skipped: %s\n", s.File, s.Reason)
	}
	for _, m := range res.UnknownPolicies {
		fmt.Fprintf(&b, "%s:%d: marker '%s' names no selected ImagePolicy with a latest image\n", m.File, m.Line, m.Setter)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// updateFailure maps an Update error to the condition Flux sets.
func updateFailure(err error) *reconciler.Failure {
	var ae applyError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, source.ErrRemovedTemplateField):
		return reconciler.Fail(imagev1.RemovedTemplateFieldReason, "%v", err).Stall()
	case errors.As(err, &ae):
		return reconciler.Fail(imagev1.UpdateFailedReason, "failed to apply policies: %v", ae.error)
	}
	return reconciler.Fail(imagev1.GitOperationFailedReason, "failed to update source: %v", err)
}

// validate checks what only a spec change can fix (Stalled).
func validate(obj *imagev1.ImageUpdateAutomation) *reconciler.Failure {
	if k := obj.Spec.SourceRef.Kind; k != "" && k != sourcev1.GitRepositoryKind {
		return reconciler.Fail(imagev1.InvalidSourceConfigReason, "source kind '%s' not supported: invalid source configuration", k).Stall()
	}
	gs := obj.Spec.GitSpec
	if gs == nil {
		return reconciler.Fail(imagev1.InvalidSourceConfigReason,
			"source kind 'GitRepository' necessitates field .spec.git: invalid source configuration").Stall()
	}
	if u := obj.Spec.Update; u != nil && u.Strategy != "" && u.Strategy != imagev1.UpdateStrategySetters {
		return reconciler.Fail(imagev1.InvalidUpdateStrategyReason, "unsupported update strategy '%s'", u.Strategy).Stall()
	}
	if _, err := source.Message(gs.Commit.MessageTemplate, source.TemplateData{}); errors.Is(err, source.ErrRemovedTemplateField) {
		return reconciler.Fail(imagev1.RemovedTemplateFieldReason, "%v", err).Stall()
	}
	return nil
}

// policies lists the selected ImagePolicies of the automation's namespace
// that have a latestRef: as observedPolicies (by name) and as the update's
// input (by `<namespace>:<name>`).
func (r *AutomationReconciler) policies(ctx context.Context, obj *imagev1.ImageUpdateAutomation) (imagev1.ObservedPolicies, map[string]update.LatestRef, *reconciler.Failure) {
	sel := labels.Everything()
	if obj.Spec.PolicySelector != nil {
		s, err := metav1.LabelSelectorAsSelector(obj.Spec.PolicySelector)
		if err != nil {
			return nil, nil, reconciler.Fail(imagev1.InvalidPolicySelectorReason, "failed to parse policy selector: %v", err).Stall()
		}
		sel = s
	}
	var list imagev1.ImagePolicyList
	if err := r.List(ctx, &list, client.InNamespace(obj.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, reconciler.Fail(meta.FailedReason, "failed to list policies: %v", err)
	}
	observed := imagev1.ObservedPolicies{}
	latest := map[string]update.LatestRef{}
	for _, p := range list.Items {
		if p.Status.LatestRef == nil {
			continue
		}
		ref := *p.Status.LatestRef
		observed[p.Name] = ref
		latest[p.Namespace+":"+p.Name] = update.LatestRef{Name: ref.Name, Tag: ref.Tag, Digest: ref.Digest}
	}
	return observed, latest, nil
}

// source reads the GitRepository and its credentials.
func (r *AutomationReconciler) source(ctx context.Context, obj *imagev1.ImageUpdateAutomation) (*sourcev1.GitRepository, *source.Auth, *reconciler.Failure) {
	key := client.ObjectKey{Namespace: obj.Spec.SourceRef.Namespace, Name: obj.Spec.SourceRef.Name}
	if key.Namespace == "" {
		key.Namespace = obj.Namespace
	}
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return nil, nil, reconciler.Fail(accessDeniedReason,
			"cannot access '%s/%s', cross-namespace references have been blocked", sourcev1.GitRepositoryKind, key).Stall()
	}
	var repo sourcev1.GitRepository
	if err := r.Get(ctx, key, &repo); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason,
				"failed configuring source manager: unable to get source '%s/%s': not found", sourcev1.GitRepositoryKind, key)
		}
		return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason, "failed configuring source manager: %v", err)
	}
	if p := repo.Spec.Provider; p != "" && p != "generic" {
		return nil, nil, reconciler.Fail(imagev1.InvalidSourceConfigReason,
			"GitRepository provider '%s' is not supported (generic only): invalid source configuration", p).Stall()
	}
	var data map[string][]byte
	if repo.Spec.SecretRef != nil {
		var s corev1.Secret
		if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: repo.Namespace, Name: repo.Spec.SecretRef.Name}, &s); err != nil {
			return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason,
				"failed configuring source manager: failed to get auth secret '%s/%s': %s", repo.Namespace, repo.Spec.SecretRef.Name, reasonOf(err))
		}
		data = s.Data
	}
	auth, err := source.NewAuth(repo.Spec.URL, data)
	if err != nil {
		return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason, "failed configuring source manager: %v", err)
	}
	if ref := repo.Spec.ProxySecretRef; ref != nil {
		var s corev1.Secret
		if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: repo.Namespace, Name: ref.Name}, &s); err != nil {
			return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason,
				"failed configuring source manager: failed to get proxy secret '%s/%s': %s", repo.Namespace, ref.Name, reasonOf(err))
		}
		if auth.Proxy, err = gitauth.Proxy(s.Data); err != nil {
			return nil, nil, reconciler.Fail(imagev1.SourceManagerFailedReason, "failed configuring source manager: %v", err)
		}
	}
	return &repo, auth, nil
}

// commitSpec is the author and the signing key.
func (r *AutomationReconciler) commitSpec(ctx context.Context, obj *imagev1.ImageUpdateAutomation) (source.CommitSpec, *reconciler.Failure) {
	c := obj.Spec.GitSpec.Commit
	spec := source.CommitSpec{AuthorName: c.Author.Name, AuthorEmail: c.Author.Email, Now: r.Now}
	if c.SigningKey == nil {
		return spec, nil
	}
	var s corev1.Secret
	if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: c.SigningKey.SecretRef.Name}, &s); err != nil {
		return spec, reconciler.Fail(imagev1.SourceManagerFailedReason,
			"failed configuring source manager: failed to get signing key secret '%s/%s': %s", obj.Namespace, c.SigningKey.SecretRef.Name, reasonOf(err))
	}
	var err error
	if c.SigningKey.Type == imagev1.SigningKeyTypeSSH {
		spec.Signer, err = source.SSHSigner(s.Data)
	} else {
		spec.SignKey, err = source.OpenPGPKey(s.Data)
	}
	if err != nil {
		return spec, reconciler.Fail(imagev1.SourceManagerFailedReason, "failed configuring source manager: %v", err)
	}
	return spec, nil
}

// checkoutRef is spec.git.checkout.ref, else the GitRepository's ref.
func checkoutRef(gs *imagev1.GitSpec, repo *sourcev1.GitRepository) source.Ref {
	var r sourcev1.GitRepositoryRef
	switch {
	case gs.Checkout != nil:
		r = gs.Checkout.Reference
	case repo.Spec.Reference != nil:
		r = *repo.Spec.Reference
	}
	return source.Ref{Branch: r.Branch, Tag: r.Tag, SemVer: r.SemVer, Name: r.Name, Commit: r.Commit}
}

// pushSpec is spec.git.push; with pullRequest, its rendered branch,
// pushed only when its change differs.
func pushSpec(obj *imagev1.ImageUpdateAutomation) (source.PushSpec, *reconciler.Failure) {
	gs := obj.Spec.GitSpec
	if gs.Push == nil {
		return source.PushSpec{}, nil
	}
	spec := source.PushSpec{Branch: gs.Push.Branch, Refspec: gs.Push.Refspec, Options: gs.Push.Options}
	if !gs.HasPullRequest() {
		return spec, nil
	}
	var f *reconciler.Failure
	spec.Branch, f = pullRequestBranch(obj)
	spec.KeepSame = true
	return spec, f
}

// prBase refuses a pull request without a base branch: a checkout of a
// tag or commit, or of the automation's own branch.
func prBase(gs *imagev1.GitSpec, base, head string) *reconciler.Failure {
	if gs.HasPullRequest() && (base == "" || base == head) {
		return reconciler.Fail(imagev1.InvalidSourceConfigReason,
			"spec.git.push.pullRequest needs a checkout branch other than its own branch '%s': invalid source configuration", head).Stall()
	}
	return nil
}

// reasonOf is a stable, secret-free reason of an API error.
func reasonOf(err error) string {
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	if apierrors.IsForbidden(err) {
		return "forbidden"
	}
	return string(apierrors.ReasonForError(err))
}
