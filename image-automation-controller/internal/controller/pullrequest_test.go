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
	"k8s.io/apimachinery/pkg/util/wait"
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

// prHost is a Git host's side of the pull request flow.
type prHost struct {
	provider string
	// dir is where the host serves the repository: GitHub's
	// owner/name, GitLab's group/subgroup/name.
	dir string
	// first and second name the first and the superseding pull request
	// ("pull request #1", "merge request !1"); ref2 is the second's ref
	// in the superseded one's comment.
	first, second, ref2 string
	url1                string // the first's web URL
	// refused are the API's refusals and the Ready message of each.
	refused []refusal
}

// refusal is an API answer with status and a body whose message is msg.
type refusal struct {
	status    int
	msg, want string
}

// The pull request flow against a fake GitHub API and a real Git server:
// one pull request opened from the automation's branch (main untouched),
// a new tag updates the same branch and pull request, a new branch name
// supersedes it (closed with a comment), API errors give a stable
// condition, and the token shows nowhere.
func TestBinaryKeepsOnePullRequestPerAutomation(t *testing.T) {
	keepsOnePullRequest(t, prHost{provider: imagev1.PullRequestGitHub, dir: "team",
		first: "pull request #1", second: "pull request #2", ref2: "#2", url1: "https://example.test/pulls/1",
		refused: []refusal{{http.StatusUnauthorized, "Bad credentials", "github API: 401 Bad credentials"},
			{http.StatusUnprocessableEntity, "Validation Failed", "github API: 422 Validation Failed"}}})
}

// The same flow against a fake GitLab API, its merge requests named as
// GitLab does (!N: #N is an issue there), the project in a subgroup.
func TestBinaryKeepsOneMergeRequestPerAutomationOnGitLab(t *testing.T) {
	keepsOnePullRequest(t, prHost{provider: imagev1.PullRequestGitLab, dir: "group/subgroup",
		first: "merge request !1", second: "merge request !2", ref2: "!2", url1: "https://example.test/-/merge_requests/1",
		// GitLab's messages start with the status code: said once.
		refused: []refusal{{http.StatusUnauthorized, "401 Unauthorized", "gitlab API: 401 Unauthorized"},
			{http.StatusForbidden, "403 Forbidden", "gitlab API: 403 Forbidden"}}})
}

// prSetup runs the binary and creates, in a new namespace, the marked
// repository served under h.dir, a policy at 6.15.0, the token Secret and
// an automation in pull request mode against api.
func prSetup(t *testing.T, h prHost, api *prtest.Server) (ns string, r *testenv.Repo, marked string, p *imagev1.ImagePolicy, a *imagev1.ImageUpdateAutomation) {
	t.Helper()
	runBinary(t)
	ns = testenv.NewNamespace(t, kube, "iua-")
	r, marked = podinfoRepo(t, ns)
	p = policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-token"},
		Data: map[string][]byte{"token": []byte(prToken)}}
	a = automation(ns, "podinfo", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.GitSpec.Push = &imagev1.PushSpec{PullRequest: &imagev1.PullRequestSpec{Provider: h.provider,
			BranchTemplate: "image-updates/{{ .AutomationObject.Name }}", APIURL: api.URL,
			SecretRef: meta.LocalObjectReference{Name: "api-token"}}}
	})
	if err := os.MkdirAll(filepath.Join(gitSrv.Root, h.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.Bare, filepath.Join(gitSrv.Root, h.dir, r.Name)); err != nil {
		t.Fatal(err)
	}
	create(t, secret, gitRepository(ns, "podinfo", gitSrv.URL+"/"+h.dir+"/"+r.Name), a)
	return ns, r, marked, p, a
}

func keepsOnePullRequest(t *testing.T, h prHost) {
	api := prtest.New(prToken)
	defer api.Close()
	ns, r, marked, p, a := prSetup(t, h, api)
	main := remote(t, r, "rev-parse", "main")

	start := time.Now()
	testenv.WaitFor(t, kube, a, "a pull request opened", func() bool {
		c := prCondition(a)
		return ready(a) && c != nil && c.Status == metav1.ConditionTrue
	})
	t.Logf("automation to opened %s: %v", h.first, time.Since(start).Round(time.Millisecond))
	prs := api.PRs()
	line := markerLine(marked)
	wantLine := fmt.Sprintf("- `ghcr.io/stefanprodan/podinfo:6.14.1` → `ghcr.io/stefanprodan/podinfo:6.15.0` in `kustomize/deployment.yaml` line %d", line)
	if len(prs) != 1 || prs[0].Head != "image-updates/podinfo" || prs[0].Base != "main" || !strings.Contains(prs[0].Body, wantLine) ||
		prs[0].Title != "Automated image update" {
		t.Fatalf("pull requests %+v, want one with %q", prs, wantLine)
	}
	if c, want := prCondition(a), h.first+" "+h.url1+" from branch 'image-updates/podinfo' into 'main'"; c.Message != want {
		t.Errorf("condition message %q, want %q", c.Message, want)
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

	supersedes(t, h, api, a)
	refusals(t, h, api, p, a)
	status, _ := json.Marshal(a.Status)
	all := strings.Join(testenv.KubeEvents(t, kube, ns, "podinfo", ""), "\n")
	for what, s := range map[string]string{"status": string(status), "events": all,
		"commit": remote(t, r, "log", "--format=%B", "image-updates/podinfo-v2"), "pull requests": fmt.Sprint(api.PRs())} {
		if strings.Contains(s, prToken) {
			t.Errorf("the token is in the %s", what)
		}
	}
}

// supersedes renames a's branch: the open pull request is closed with a
// comment naming the new one, opened from the new branch.
func supersedes(t *testing.T, h prHost, api *prtest.Server, a *imagev1.ImageUpdateAutomation) {
	t.Helper()
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
	if c := api.PRs()[0].Comments; len(c) != 1 || !strings.HasPrefix(c[0], "Superseded by "+h.ref2+" (branch `image-updates/podinfo-v2`)") {
		t.Errorf("comments on the superseded pull request: %q", c)
	}
	if c := prCondition(a); !strings.HasPrefix(c.Message, h.second+" ") {
		t.Errorf("condition message %q, want it to name %s", c.Message, h.second)
	}
	want := "closed superseded " + h.first + " from branch 'image-updates/podinfo'"
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.WaitTimeout, true,
		func(context.Context) (bool, error) {
			return strings.Contains(strings.Join(testenv.KubeEvents(t, kube, a.Namespace, a.Name, ""), "\n"), want), nil
		})
	if err != nil {
		t.Errorf("no event says %q: %q", want, testenv.KubeEvents(t, kube, a.Namespace, a.Name, ""))
	}
}

// refusals: each API refusal gives a stable condition with the status
// code and the API's message; the automation is Ready again after.
func refusals(t *testing.T, h prHost, api *prtest.Server, p *imagev1.ImagePolicy, a *imagev1.ImageUpdateAutomation) {
	t.Helper()
	for _, e := range h.refused {
		api.Fail(e.status, e.msg)
		setLatest(t, p, imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: fmt.Sprintf("6.%d.0", 20+e.status%100)})
		want := "failed to sync pull request: " + e.want
		testenv.WaitFor(t, kube, a, want, func() bool {
			c := apimeta.FindStatusCondition(a.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == PullRequestFailedReason && c.Message == want
		})
	}
	api.Fail(0, "")
	testenv.WaitFor(t, kube, a, "Ready again", func() bool { return ready(a) })
}
