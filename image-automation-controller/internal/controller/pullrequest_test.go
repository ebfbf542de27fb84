package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-automation-controller/internal/pullrequest/prtest"
	"github.com/eddyops/eddy/pkg/testenv"
)

const prToken = "ghp_test-token-never-shown"

// markerLine is the 1-based line of the marked image in deployment.yaml.
func markerLine(marked string) int {
	for i, l := range strings.Split(marked, "\n") {
		if strings.Contains(l, "$imagepolicy") {
			return i + 1
		}
	}
	return 0
}

func prCondition(a *imagev1.ImageUpdateAutomation) *metav1.Condition {
	return apimeta.FindStatusCondition(a.Status.Conditions, PullRequestCondition)
}

// The pull request flow against a fake GitHub API and a real Git server:
// one pull request opened from the automation's branch (main untouched),
// a new tag updates the same branch and pull request, a new branch name
// supersedes it (closed with a comment), API errors give a stable
// condition, and the token shows nowhere.
func TestBinaryKeepsOnePullRequestPerAutomation(t *testing.T) {
	runBinary(t)
	api := prtest.New(prToken)
	defer api.Close()
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, marked := podinfoRepo(t, ns)
	main := remote(t, r, "rev-parse", "main")
	p := policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github-token"},
		Data: map[string][]byte{"token": []byte(prToken)}}
	a := automation(ns, "podinfo", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.GitSpec.Push = &imagev1.PushSpec{PullRequest: &imagev1.PullRequestSpec{Provider: imagev1.PullRequestGitHub,
			BranchTemplate: "image-updates/{{ .AutomationObject.Name }}", APIURL: api.URL,
			SecretRef: meta.LocalObjectReference{Name: "github-token"}}}
	})
	// GitHub's repositories are owner/name: serve this one as team/<name>.
	if err := os.MkdirAll(filepath.Join(gitSrv.Root, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.Bare, filepath.Join(gitSrv.Root, "team", r.Name)); err != nil {
		t.Fatal(err)
	}
	create(t, secret, gitRepository(ns, "podinfo", gitSrv.URL+"/team/"+r.Name), a)

	start := time.Now()
	testenv.WaitFor(t, kube, a, "a pull request opened", func() bool {
		c := prCondition(a)
		return ready(a) && c != nil && c.Status == metav1.ConditionTrue
	})
	t.Logf("automation to opened pull request: %v", time.Since(start).Round(time.Millisecond))
	prs := api.PRs()
	line := markerLine(marked)
	wantLine := fmt.Sprintf("- `ghcr.io/stefanprodan/podinfo:6.14.1` → `ghcr.io/stefanprodan/podinfo:6.15.0` in `kustomize/deployment.yaml` line %d", line)
	if len(prs) != 1 || prs[0].Head != "image-updates/podinfo" || prs[0].Base != "main" || !strings.Contains(prs[0].Body, wantLine) ||
		prs[0].Title != "Automated image update" {
		t.Fatalf("pull requests %+v, want one with %q", prs, wantLine)
	}
	if c := prCondition(a); c.Message != "pull request #1 https://example.test/pulls/1 from branch 'image-updates/podinfo' into 'main'" {
		t.Errorf("condition message %q", c.Message)
	}
	if remote(t, r, "rev-parse", "main") != main || remote(t, r, "rev-parse", "image-updates/podinfo^") != main {
		t.Fatal("main moved, or the branch is not main plus one commit")
	}

	// A second tag: same branch (force-pushed from main), same pull request.
	setLatest(t, p, imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.16.0"})
	testenv.WaitFor(t, kube, a, "the pull request updated", func() bool {
		prs := api.PRs()
		return len(prs) == 1 && strings.Contains(prs[0].Body, "podinfo:6.16.0`")
	})
	if got := remote(t, r, "show", "image-updates/podinfo:kustomize/deployment.yaml"); !strings.Contains(got, "podinfo:6.16.0 #") ||
		remote(t, r, "rev-parse", "image-updates/podinfo^") != main {
		t.Errorf("branch image-updates/podinfo:\n%s", got)
	}

	// A new branch name supersedes the open pull request.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(a), a); err != nil {
			return err
		}
		a.Spec.GitSpec.Push.PullRequest.BranchTemplate = "image-updates/{{ .AutomationObject.Name }}-v2"
		return kube.Update(context.Background(), a)
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, kube, a, "the first pull request superseded", func() bool {
		prs := api.PRs()
		return len(prs) == 2 && !prs[0].Open && prs[1].Open && prs[1].Head == "image-updates/podinfo-v2" && ready(a)
	})
	if c := api.PRs()[0].Comments; len(c) != 1 || !strings.HasPrefix(c[0], "Superseded by #2 (branch `image-updates/podinfo-v2`)") {
		t.Errorf("comments on the superseded pull request: %q", c)
	}

	// API errors: a stable condition with the status code and the API's message.
	for _, e := range []struct {
		status int
		msg    string
	}{{http.StatusUnauthorized, "Bad credentials"}, {http.StatusUnprocessableEntity, "Validation Failed"}} {
		api.Fail(e.status, e.msg)
		setLatest(t, p, imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: fmt.Sprintf("6.%d.0", 20+e.status%100)})
		want := fmt.Sprintf("failed to sync pull request: github API: %d %s", e.status, e.msg)
		testenv.WaitFor(t, kube, a, want, func() bool {
			c := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == PullRequestFailedReason && c.Message == want
		})
	}
	api.Fail(0, "")
	testenv.WaitFor(t, kube, a, "Ready again", func() bool { return ready(a) })

	status, _ := json.Marshal(a.Status)
	all := strings.Join(testenv.KubeEvents(t, kube, ns, "podinfo", ""), "\n")
	for what, s := range map[string]string{"status": string(status), "events": all,
		"commit": remote(t, r, "log", "--format=%B", "image-updates/podinfo-v2"), "pull requests": fmt.Sprint(api.PRs())} {
		if strings.Contains(s, prToken) {
			t.Errorf("the token is in the %s", what)
		}
	}
}
