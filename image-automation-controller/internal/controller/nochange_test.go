package controller

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
)

// gitOps counts what the Git server answered for one repository: pushes
// (receive-pack POSTs), fetches (clones or fetches asking for objects) and
// ref listings (info/refs GETs).
type gitOps struct{ pushes, fetches, listings int }

// gitOpsSince counts the requests for repository r among reqs.
func gitOpsSince(reqs []gitserver.Request, r *testenv.Repo) gitOps {
	var ops gitOps
	base := "/" + r.Name + "/"
	for _, q := range reqs {
		switch {
		case q.Status != http.StatusOK || !strings.HasPrefix(q.Path, base):
		case q.Method == http.MethodPost && strings.HasSuffix(q.Path, "/git-receive-pack"):
			ops.pushes++
		case q.Fetch:
			ops.fetches++
		case q.Method == http.MethodGet && strings.HasSuffix(q.Path, "/info/refs"):
			ops.listings++
		}
	}
	return ops
}

// forceReconcile sets reconcile.fluxcd.io/requestedAt on a (as `eddy
// reconcile image update` does) and waits until the controller recorded
// it handled, Ready: one whole reconcile ran after the request.
func forceReconcile(t testing.TB, a *imagev1.ImageUpdateAutomation) {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := kube.Patch(context.Background(), a, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, kube, a, "the reconcile request handled", func() bool {
		return ready(a) && a.Status.LastHandledReconcileAt == token
	})
}

// timedReconcile forces one reconcile of a and returns the Git requests
// for r it made and how long it took.
func timedReconcile(b testing.TB, a *imagev1.ImageUpdateAutomation, r *testenv.Repo) (gitOps, time.Duration) {
	b.Helper()
	mark := len(gitSrv.Requests())
	t0 := time.Now()
	forceReconcile(b, a)
	return gitOpsSince(gitSrv.Requests()[mark:], r), time.Since(t0)
}

// unrelatedCommit commits a file outside the markers' reach on main (not
// through the server: the count of its requests stays the automation's)
// and returns the new head.
func unrelatedCommit(t testing.TB, r *testenv.Repo, n int) string {
	t.Helper()
	r.MustGit(t, "fetch", "-q", r.Bare, "main")
	r.MustGit(t, "reset", "-q", "--hard", "FETCH_HEAD")
	return r.MustCommit(t, map[string]string{"NOTES.md": fmt.Sprintf("note %d\n", n)}, "an unrelated change")
}

// After a commit, a reconcile with nothing new to write pushes nothing
// and commits nothing: with main where the automation left it, it only
// lists the remote's refs (no clone); with main moved by an unrelated
// commit, it clones, finds nothing to change and still pushes nothing.
func TestBinaryNoChangeReconcileAfterACommitPushesNothing(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, _ := podinfoRepo(t, ns)
	policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0",
		Digest: "sha256:" + strings.Repeat("ab", 32)})
	a := automation(ns, "podinfo", nil)
	create(t, gitRepository(ns, "podinfo", r.URL()), a)
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	pushed := a.Status.LastPushCommit
	if head := remote(t, r, "rev-parse", "main"); head != pushed {
		t.Fatalf("main %s, lastPushCommit %s", head, pushed)
	}

	// A reconcile queued around the push may read the cache's copy from
	// before it and clone once more (nothing to write); let it run first.
	forceReconcile(t, a)
	mark := len(gitSrv.Requests())
	forceReconcile(t, a)
	if ops := gitOpsSince(gitSrv.Requests()[mark:], r); ops.pushes != 0 || ops.fetches != 0 || ops.listings == 0 {
		t.Errorf("a reconcile with main unchanged: %+v, want ref listings only", ops)
	}
	if head := remote(t, r, "rev-parse", "main"); head != pushed || a.Status.LastPushCommit != pushed {
		t.Fatalf("main %s, lastPushCommit %s after a no-change reconcile (want both %s)", head, a.Status.LastPushCommit, pushed)
	}

	moved := unrelatedCommit(t, r, 1)
	mark = len(gitSrv.Requests())
	forceReconcile(t, a)
	if ops := gitOpsSince(gitSrv.Requests()[mark:], r); ops.pushes != 0 || ops.fetches == 0 {
		t.Errorf("a reconcile after an unrelated commit: %+v, want a fetch and no push", ops)
	}
	if head := remote(t, r, "rev-parse", "main"); head != moved || a.Status.LastPushCommit != pushed ||
		a.Status.ObservedSourceRevision != "main@sha1:"+moved {
		t.Fatalf("main %s, status %+v after an unrelated commit (want main %s, lastPushCommit %s)", head, a.Status, moved, pushed)
	}
}

// BenchmarkNoChangeCycle100Policies measures the built binary on one
// ImageUpdateAutomation over a repository of 100 Deployments, each image
// marked for one of 100 ImagePolicies (latestRef with a digest, as the
// reflector writes it with digestReflectionPolicy IfNotPresent): the time
// from creating the automation to its pushed commit; then, per no-change
// cycle (a reconcile request, the policies unchanged), the time, the
// pushes, fetches and ref listings the Git server answered and the
// commits added to main; the same for cycles after an unrelated commit on
// main (the automation must clone again); and the controller's peak RSS.
// One run whatever b.N.
func BenchmarkNoChangeCycle100Policies(b *testing.B) {
	const n, cycles = 100, 5
	proc := runBinary(b)
	ns := testenv.NewNamespace(b, kube, "bench-")
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("apps/app%d.yaml", i)] = benchDeployment(ns, i)
	}
	r := gitSrv.NewRepo(b, files)
	if _, err := gitserver.Git(r.Bare, "config", "http.receivepack", "true"); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		policy(b, ns, fmt.Sprintf("app%d", i), imagev1.ImageRef{Name: fmt.Sprintf("registry.example.com/app%d", i),
			Tag: "1.1.0", Digest: fmt.Sprintf("sha256:%064x", i+1)})
	}
	a := automation(ns, "bench", func(a *imagev1.ImageUpdateAutomation) { a.Spec.Update.Path = "./apps" })
	start := time.Now()
	create(b, gitRepository(ns, "bench", r.URL()), a)
	testenv.WaitFor(b, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	first := time.Since(start)
	pushed := a.Status.LastPushCommit
	if files := remote(b, r, "show", "--format=", "--name-only", "main"); len(strings.Fields(files)) != n {
		b.Fatalf("the first commit changes %d files, want %d", len(strings.Fields(files)), n)
	}

	// Settle: a reconcile queued while the first one ran (the policies'
	// and the GitRepository's events) runs now, outside the count.
	forceReconcile(b, a)
	var total gitOps
	var took time.Duration
	for range cycles {
		ops, d := timedReconcile(b, a, r)
		took += d
		total.pushes, total.fetches, total.listings = total.pushes+ops.pushes, total.fetches+ops.fetches, total.listings+ops.listings
	}
	commits, _ := strconv.Atoi(remote(b, r, "rev-list", "--count", pushed+"..main"))
	// Cycles after an unrelated commit on main: a clone, nothing to write.
	var moved gitOps
	var movedTook time.Duration
	for i := range cycles {
		unrelatedCommit(b, r, i)
		ops, d := timedReconcile(b, a, r)
		movedTook += d
		moved.pushes, moved.fetches = moved.pushes+ops.pushes, moved.fetches+ops.fetches
	}
	if a.Status.LastPushCommit != pushed {
		b.Errorf("lastPushCommit moved from %s to %s in no-change cycles", pushed, a.Status.LastPushCommit)
	}
	b.ReportMetric(first.Seconds(), "s-first-commit")
	b.ReportMetric(took.Seconds()/cycles, "s/nochange-cycle")
	b.ReportMetric(float64(total.pushes)/cycles, "pushes/nochange-cycle")
	b.ReportMetric(float64(commits)/cycles, "commits/nochange-cycle")
	b.ReportMetric(float64(total.fetches)/cycles, "fetches/nochange-cycle")
	b.ReportMetric(float64(total.listings)/cycles, "ref-listings/nochange-cycle")
	b.ReportMetric(movedTook.Seconds()/cycles, "s/moved-main-cycle")
	b.ReportMetric(float64(moved.pushes)/cycles, "pushes/moved-main-cycle")
	b.ReportMetric(float64(moved.fetches)/cycles, "fetches/moved-main-cycle")
	b.ReportMetric(testenv.PeakRSSMiB(proc.PID()), "MiB-peak-rss")
}

// benchDeployment is Deployment app<i> whose image, 1.0.0 without digest,
// is marked for policy ns:app<i>.
func benchDeployment(ns string, i int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app%[2]d
spec:
  selector:
    matchLabels: {app: app%[2]d}
  template:
    metadata:
      labels: {app: app%[2]d}
    spec:
      containers:
        - name: app
          image: registry.example.com/app%[2]d:1.0.0 # {"$imagepolicy": "%[1]s:app%[2]d"}
`, ns, i)
}
