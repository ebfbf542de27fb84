package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-automation-controller/internal/pullrequest"
	"github.com/eddyops/eddy/image-automation-controller/internal/source"
	"github.com/eddyops/eddy/image-automation-controller/internal/update"
	"github.com/eddyops/eddy/pkg/reconciler"
)

// Eddy's condition and reasons for spec.git.push.pullRequest (an Eddy
// extension; Flux's fields and conditions are left as Flux has them).
const (
	// PullRequestCondition is True with the open pull request's number,
	// URL and branches in its message, False once none is open.
	PullRequestCondition = "PullRequest"
	// PullRequestFailedReason: the provider's API refused a call (its
	// status code and message), or the token Secret is missing.
	PullRequestFailedReason = "PullRequestFailed"
	// PullRequestClosedReason: the checkout branch already has the images;
	// the automation's open pull requests were closed.
	PullRequestClosedReason = "Closed"
)

// tokenKey is the pull request Secret's key holding the API token.
const tokenKey = "token"

// pullRequestBranch renders branchTemplate over the automation's
// template data (without .Changed, not known before the update).
func pullRequestBranch(obj *imagev1.ImageUpdateAutomation) (string, *reconciler.Failure) {
	gs := obj.Spec.GitSpec
	data := source.TemplateData{AutomationObject: client.ObjectKeyFromObject(obj), Values: gs.Commit.MessageTemplateValues}
	b, err := source.Render("branch", gs.Push.PullRequest.BranchTemplate, data)
	b = strings.TrimSpace(b)
	if err == nil && (b == "" || strings.ContainsAny(b, " ~^:?*[\\") || strings.Contains(b, "..")) {
		err = fmt.Errorf("rendered branch name '%s' is not a valid branch name", b)
	}
	if err != nil {
		return "", reconciler.Fail(imagev1.InvalidSourceConfigReason,
			"spec.git.push.pullRequest.branchTemplate: %v: invalid source configuration", err).Stall()
	}
	return b, nil
}

// prRun is what syncPullRequest needs of a run.
type prRun struct {
	gitURL, base, head string
	// updatePath prefixes the result's file names (relative to it).
	updatePath string
	result     update.Result
	message    string
}

// syncPullRequest opens, updates or closes the automation's pull request
// (head "" closes: nothing to propose) and records it in the PullRequest
// condition; it returns the event's line.
func (r *AutomationReconciler) syncPullRequest(ctx context.Context, obj *imagev1.ImageUpdateAutomation, run prRun) (string, *reconciler.Failure) {
	spec := obj.Spec.GitSpec.Push.PullRequest
	var s corev1.Secret
	if err := r.Secrets.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: spec.SecretRef.Name}, &s); err != nil {
		return "", reconciler.Fail(PullRequestFailedReason, "failed to get pull request secret '%s/%s': %s", obj.Namespace, spec.SecretRef.Name, reasonOf(err))
	}
	token := string(s.Data[tokenKey])
	if token == "" {
		return "", reconciler.Fail(PullRequestFailedReason, "pull request secret '%s/%s' has no key '%s'", obj.Namespace, spec.SecretRef.Name, tokenKey)
	}
	p, err := pullrequest.New(spec.Provider, spec.APIURL, run.gitURL, token, &http.Client{Timeout: 30 * time.Second})
	if errors.Is(err, pullrequest.ErrNoAPIURL) {
		return "", reconciler.Fail(imagev1.InvalidSourceConfigReason, "%v: invalid source configuration", err).Stall()
	}
	if err != nil {
		return "", reconciler.Fail(PullRequestFailedReason, "%v", err)
	}
	res := relativeToRoot(run.result, run.updatePath)
	title, body, f := prText(obj, res, run.message)
	if f != nil {
		return "", f
	}
	marker := pullrequest.Marker(obj.Namespace, obj.Name)
	synced, err := pullrequest.Sync(ctx, p, marker, run.head, run.base, title, body)
	if err != nil {
		return "", reconciler.Fail(PullRequestFailedReason, "failed to sync pull request: %v", err)
	}
	var lines []string
	for _, pr := range synced.Superseded {
		lines = append(lines, fmt.Sprintf("closed superseded %s from branch '%s'", pr.Name(), pr.Head))
	}
	if synced.Action == pullrequest.Closed {
		reconciler.SetCondition(obj, PullRequestCondition, metav1.ConditionFalse, PullRequestClosedReason,
			fmt.Sprintf("no pull request open: branch '%s' has the images", run.base))
		return strings.Join(lines, "\n"), nil
	}
	pr := synced.PR
	reconciler.SetCondition(obj, PullRequestCondition, metav1.ConditionTrue, prReason(synced.Action),
		fmt.Sprintf("%s %s from branch '%s' into '%s'", pr.Name(), pr.URL, run.head, run.base))
	if synced.Action != pullrequest.Unchanged {
		lines = append([]string{fmt.Sprintf("%s %s: %s", pr.Name(), synced.Action, pr.URL)}, lines...)
	}
	return strings.Join(lines, "\n"), nil
}

func prReason(a pullrequest.Action) string {
	switch a {
	case pullrequest.Opened:
		return "Opened"
	case pullrequest.Updated:
		return "Updated"
	}
	return "Unchanged"
}

// prOpen tells whether the last run left a pull request open.
func prOpen(obj *imagev1.ImageUpdateAutomation) bool {
	return apimeta.IsStatusConditionTrue(obj.Status.Conditions, PullRequestCondition)
}

// prText renders the title (default the commit message's first line) and
// the body (default pullrequest.Body).
func prText(obj *imagev1.ImageUpdateAutomation, res update.Result, message string) (string, string, *reconciler.Failure) {
	gs := obj.Spec.GitSpec
	spec := gs.Push.PullRequest
	data := source.TemplateData{AutomationObject: client.ObjectKeyFromObject(obj), Changed: res, Values: gs.Commit.MessageTemplateValues}
	title, _, _ := strings.Cut(message, "\n")
	body := pullrequest.Body(res)
	var err error
	if spec.TitleTemplate != "" {
		if title, err = source.Render("title", spec.TitleTemplate, data); err != nil {
			return "", "", reconciler.Fail(imagev1.InvalidSourceConfigReason, "spec.git.push.pullRequest.titleTemplate: %v", err).Stall()
		}
	}
	if spec.BodyTemplate != "" {
		if body, err = source.Render("body", spec.BodyTemplate, data); err != nil {
			return "", "", reconciler.Fail(imagev1.InvalidSourceConfigReason, "spec.git.push.pullRequest.bodyTemplate: %v", err).Stall()
		}
	}
	return strings.TrimSpace(title), body, nil
}

// relativeToRoot returns res with its file names relative to the
// repository's root rather than to the update path.
func relativeToRoot(res update.Result, updatePath string) update.Result {
	dir := path.Clean("/" + strings.TrimPrefix(updatePath, "./"))
	if dir == "/" {
		return res
	}
	out := update.Result{Skipped: res.Skipped, UnknownPolicies: res.UnknownPolicies, FileChanges: map[string]update.ObjectChanges{}}
	for file, objs := range res.FileChanges {
		name := strings.TrimPrefix(path.Join(dir, file), "/")
		oc := update.ObjectChanges{}
		for id, cs := range objs {
			for _, c := range cs {
				c.File = name
				oc[id] = append(oc[id], c)
			}
		}
		out.FileChanges[name] = oc
	}
	return out
}
