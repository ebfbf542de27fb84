package source

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/types"

	"github.com/eddyops/eddy/image-automation-controller/internal/update"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
)

var gitSrv *testenv.GitServer

func TestMain(m *testing.M) {
	srv, err := testenv.StartGitServer()
	if err != nil {
		panic(err)
	}
	gitSrv = srv
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  template:
    spec:
      containers:
      - name: podinfod
        image: ghcr.io/stefanprodan/podinfo:6.14.1 # {"$imagepolicy": "apps:podinfo"}
`

var latest = map[string]update.LatestRef{"apps:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"}}

const fluxTemplate = `Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}`

// newPushableRepo is a served repository with the marked deployment on
// main that accepts pushes (and push options).
func newPushableRepo(t *testing.T) *testenv.Repo {
	t.Helper()
	r := gitSrv.NewRepo(t, map[string]string{"deploy/deployment.yaml": deployment, "README.md": "app\n"})
	for _, kv := range [][2]string{{"http.receivepack", "true"}, {"receive.advertisePushOptions", "true"}} {
		if _, err := gitserver.Git(r.Bare, "config", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func clone(t *testing.T, r *testenv.Repo, ref Ref) *Checkout {
	t.Helper()
	c, err := Clone(context.Background(), r.URL(), nil, ref, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func applySetters(path string) func(string) (update.Result, error) {
	return func(dir string) (update.Result, error) { return update.WithSetters(dir, path, latest) }
}

func message(tmpl string) func(update.Result) (string, error) {
	return func(res update.Result) (string, error) {
		return Message(tmpl, TemplateData{AutomationObject: types.NamespacedName{Namespace: "apps", Name: "auto"}, Changed: res})
	}
}

var author = CommitSpec{AuthorName: "Flux Bot", AuthorEmail: "flux@example.com"}

func remote(t *testing.T, r *testenv.Repo, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(r.Bare, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUpdateCommitsAndPushesToTheCheckedOutBranch(t *testing.T) {
	r := newPushableRepo(t)
	before := remote(t, r, "rev-parse", "main")
	c := clone(t, r, Ref{Branch: "main"})
	if c.Revision() != "main@sha1:"+before {
		t.Errorf("revision %s", c.Revision())
	}
	start := time.Now()
	out, err := c.Update(context.Background(), applySetters("deploy"), message(fluxTemplate), author, PushSpec{Options: map[string]string{"ci.skip": ""}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("update and push: %v", time.Since(start))
	if head := remote(t, r, "rev-parse", "main"); head != out.Commit.String() || out.Attempts != 1 {
		t.Fatalf("remote main %s, pushed %s after %d attempts", head, out.Commit, out.Attempts)
	}
	if parent := remote(t, r, "rev-parse", "main^"); parent != before {
		t.Errorf("parent %s, want %s", parent, before)
	}
	wantMsg := "Automated image update\n\nAutomation name: apps/auto\n\nFiles:\n- deployment.yaml\nObjects:\n- Deployment podinfo\n  Changes:\n" +
		"    - ghcr.io/stefanprodan/podinfo:6.14.1 -> ghcr.io/stefanprodan/podinfo:6.15.0\n"
	if msg := remote(t, r, "log", "-1", "--format=%B", "main"); msg != strings.TrimSpace(wantMsg) {
		t.Errorf("message:\n%s\nwant:\n%s", msg, wantMsg)
	}
	if who := remote(t, r, "log", "-1", "--format=%an <%ae> / %cn <%ce>", "main"); who != "Flux Bot <flux@example.com> / Flux Bot <flux@example.com>" {
		t.Errorf("author/committer %s", who)
	}
	got := remote(t, r, "show", "main:deploy/deployment.yaml") + "\n"
	if got != strings.Replace(deployment, "6.14.1", "6.15.0", 1) {
		t.Errorf("file:\n%s", got)
	}
	if files := remote(t, r, "show", "--format=", "--name-only", "main"); files != "deploy/deployment.yaml" {
		t.Errorf("commit touches %q", files)
	}
	// Nothing left to change: no commit.
	out, err = clone(t, r, Ref{Branch: "main"}).Update(context.Background(), applySetters(""), message(""), author, PushSpec{})
	if err != nil || out.Commit != plumbing.ZeroHash || !out.Result.Empty() {
		t.Errorf("second update: %+v %v", out, err)
	}
}

// A commit pushed by someone else between the clone and the push: the
// automation's push is refused, it applies the update again on the new
// head and pushes; the other commit is kept, nothing is forced.
func TestUpdateRetriesOnTheNewHeadWhenTheBranchMoved(t *testing.T) {
	r := newPushableRepo(t)
	c := clone(t, r, Ref{Branch: "main"})
	other := r.MustCommit(t, map[string]string{"README.md": "app, edited\n"}, "a concurrent commit")
	out, err := c.Update(context.Background(), applySetters(""), message(""), author, PushSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attempts != 2 {
		t.Errorf("attempts %d, want 2", out.Attempts)
	}
	if parent := remote(t, r, "rev-parse", "main^"); parent != other {
		t.Errorf("the pushed commit's parent is %s, want the concurrent commit %s", parent, other)
	}
	if msg := remote(t, r, "log", "-1", "--format=%B", "main"); msg != DefaultMessage {
		t.Errorf("message %q", msg)
	}
	if readme := remote(t, r, "show", "main:README.md"); readme != "app, edited" {
		t.Errorf("README.md %q: the concurrent change was lost", readme)
	}
	if got := remote(t, r, "show", "main:deploy/deployment.yaml"); !strings.Contains(got, "podinfo:6.15.0 #") {
		t.Errorf("update missing:\n%s", got)
	}
}

// The concurrent commit made the same change: after the refused push
// there is nothing left to commit.
func TestUpdateStopsWhenTheConcurrentCommitMadeTheSameChange(t *testing.T) {
	r := newPushableRepo(t)
	c := clone(t, r, Ref{Branch: "main"})
	other := r.MustCommit(t, map[string]string{"deploy/deployment.yaml": strings.Replace(deployment, "6.14.1", "6.15.0", 1)}, "same update by hand")
	out, err := c.Update(context.Background(), applySetters(""), message(""), author, PushSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Commit != plumbing.ZeroHash || remote(t, r, "rev-parse", "main") != other {
		t.Errorf("pushed %s over %s", out.Commit, other)
	}
}

// Bounded retries: a branch that keeps moving fails the update with
// ErrRejected, the remote keeps the others' commits.
func TestUpdateGivesUpAfterTheLastAttempt(t *testing.T) {
	r := newPushableRepo(t)
	c := clone(t, r, Ref{Branch: "main"})
	n := 0
	apply := func(dir string) (update.Result, error) {
		n++
		r.MustCommit(t, map[string]string{"README.md": strings.Repeat("x", n) + "\n"}, "moving")
		return update.WithSetters(dir, "", latest)
	}
	_, err := c.Update(context.Background(), apply, message(""), author, PushSpec{Attempts: 3})
	if err == nil || !strings.Contains(err.Error(), ErrRejected.Error()) || n != 3 {
		t.Fatalf("err %v after %d applies", err, n)
	}
	if msg := remote(t, r, "log", "-1", "--format=%s", "main"); msg != "moving" {
		t.Errorf("remote head %q", msg)
	}
}

// push.branch: a branch made from the checkout holds the update; the
// checked-out branch is left alone; push.refspec is pushed too.
func TestUpdatePushesToAnotherBranchAndRefspec(t *testing.T) {
	r := newPushableRepo(t)
	main := remote(t, r, "rev-parse", "main")
	c := clone(t, r, Ref{Branch: "main"})
	out, err := c.Update(context.Background(), applySetters(""), message(""), author,
		PushSpec{Branch: "image-updates", Refspec: "refs/heads/image-updates:refs/heads/release"})
	if err != nil {
		t.Fatal(err)
	}
	if remote(t, r, "rev-parse", "main") != main {
		t.Error("main moved")
	}
	for _, b := range []string{"image-updates", "release"} {
		if h := remote(t, r, "rev-parse", b); h != out.Commit.String() {
			t.Errorf("%s at %s, want %s", b, h, out.Commit)
		}
	}
	if parent := remote(t, r, "rev-parse", "image-updates^"); parent != main {
		t.Errorf("push branch parent %s, want main %s", parent, main)
	}
	if c.Revision() != "main@sha1:"+main {
		t.Errorf("observed revision %s", c.Revision())
	}
}

func TestCloneResolvesTagsSemverAndCommits(t *testing.T) {
	r := newPushableRepo(t)
	first := remote(t, r, "rev-parse", "main")
	second := r.MustCommit(t, map[string]string{"README.md": "v2\n"}, "second")
	r.MustGit(t, "tag", "v1.0.0", first)
	r.MustGit(t, "tag", "-a", "-m", "release", "v1.1.0", second)
	r.MustGit(t, "tag", "v2.0.0-rc.1", second)
	r.MustGit(t, "push", "-q", r.Bare, "--tags")
	for _, tc := range []struct {
		ref  Ref
		want string
	}{
		{Ref{Tag: "v1.0.0"}, first},
		{Ref{SemVer: "^1.0.0"}, second},
		{Ref{Commit: first}, first},
		{Ref{Branch: "main", Commit: first}, first},
		{Ref{Name: "refs/tags/v1.1.0"}, second},
	} {
		c := clone(t, r, tc.ref)
		if c.Head.String() != tc.want || c.Branch != "" {
			t.Errorf("%+v: head %s branch %q, want %s", tc.ref, c.Head, c.Branch, tc.want)
		}
	}
	if _, err := Clone(context.Background(), r.URL(), nil, Ref{SemVer: ">=3.0.0"}, t.TempDir()); err == nil ||
		err.Error() != "no match found for semver: >=3.0.0" {
		t.Errorf("semver without match: %v", err)
	}
	// A tag checkout has no branch to push to unless push.branch is set.
	_, err := clone(t, r, Ref{Tag: "v1.0.0"}).Update(context.Background(), applySetters(""), message(""), author, PushSpec{})
	if err == nil || !strings.Contains(err.Error(), "no branch to push to") {
		t.Errorf("tag without push branch: %v", err)
	}
}
