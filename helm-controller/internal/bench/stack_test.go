package bench

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stackLabel marks each HelmRelease with the helm-controller that is to
// reconcile it: each runs with --watch-label-selector on it, so neither
// touches the other's HelmReleases (the one measured second would otherwise
// adopt the first one's).
const stackLabel = "bench.eddy.dev/stack"

// stack is one helm-controller under measurement: Eddy's or Flux's binary
// and the flags beyond those both get (--concurrent, --metrics-addr,
// --watch-label-selector; each keeps its own defaults otherwise, client
// limits included).
type stack struct {
	name string // "eddy" or "flux": label value, namespace and log prefix
	exe  string
	args []string
	// start is testenv.StartController or, for Flux's binary (no
	// --kubeconfig flag), testenv.StartFluxController.
	start func(e *testenv.Environment, exe, logPath string, args ...string) (*testenv.Process, error)
}

// fluxArgs turn off what Flux's helm-controller would otherwise reach for:
// no notification-controller, no leader election (the defaults, spelt out).
var fluxArgs = []string{"--events-addr=", "--enable-leader-election=false"}

type stackResult struct {
	ready    time.Duration
	hc, sc   usage    // CPU over the install phase; peak RSS: helm-controller's before it stops
	mem      memSplit // helm-controller's, over both phases
	requests float64
	noop     noopResult
}

// runControllers runs source-controller (Eddy's, serving the HelmChart
// artifacts of both) and, one after the other, each stack's
// helm-controller on n HelmReleases of their own namespace; each
// helm-controller runs only during its own phase, and both are stopped
// before the baseline runs alone.
func runControllers(b *testing.B, n int, chart, scExe string, stacks []stack) map[string]stackResult {
	srv := helmtest.NewChartServer(b)
	srv.Add(chart)
	work := b.TempDir()
	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	sc, err := testenv.StartController(env, scExe, filepath.Join(work, "source-controller.log"),
		"--storage-path="+filepath.Join(work, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port))
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Stop()
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("source-controller log (tail):\n%s", tail(sc.LogPath, 40))
		}
	})
	out := map[string]stackResult{}
	for _, s := range stacks {
		out[s.name] = runStack(b, s, n, srv.URL(), sc, work)
	}
	return out
}

// runStack starts s's helm-controller, creates one HelmRepository and n
// HelmReleases of it in a new namespace, waits until all are Ready, runs
// the no-change reconcile and stops the helm-controller.
func runStack(b *testing.B, s stack, n int, repoURL string, sc *testenv.Process, work string) stackResult {
	ns := testenv.NewNamespace(b, env.Client, "bench-"+s.name+"-")
	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{fmt.Sprintf("--concurrent=%d", concurrency), "--metrics-addr=" + metrics,
		fmt.Sprintf("--watch-label-selector=%s=%s", stackLabel, s.name)}, s.args...)
	logPath := filepath.Join(work, fmt.Sprintf("%s-helm-controller-%d.log", s.name, n))
	hc, err := s.start(env, s.exe, logPath, args...)
	if err != nil {
		b.Fatal(err)
	}
	defer hc.Stop()
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("%s helm-controller log (tail):\n%s", s.name, tail(hc.LogPath, 60))
		}
	})

	var res stackResult
	hc0, sc0 := procUsage(b, hc.PID()), procUsage(b, sc.PID())
	req0 := requestCounts(b, metrics)
	stopMem := sampleMemory(b, hc.PID(), metrics, fmt.Sprintf("%s-%d-peak-heap", s.name, n))
	stopProfile := profileCPU(b, metrics, fmt.Sprintf("%s-%d-install", s.name, n))
	start := time.Now()
	createReleases(b, s.name, ns, n, repoURL)
	waitReady(b, ns, n, start)
	res.ready = time.Since(start)
	stopProfile()
	saveHeap(b, metrics, fmt.Sprintf("%s-%d-heap", s.name, n))
	hc1, sc1 := procUsage(b, hc.PID()), procUsage(b, sc.PID())
	req1 := requestCounts(b, metrics)
	res.hc.cpu, res.sc = hc1.cpu-hc0.cpu, usage{cpu: sc1.cpu - sc0.cpu, peakRSSMiB: sc1.peakRSSMiB}
	byMethod, total := requestDelta(req0, req1)
	res.requests = total
	b.Logf("%s: %d HelmReleases Ready in %s; API requests by method %v", s.name, n, res.ready.Round(time.Millisecond), sorted(byMethod))

	stopProfile = profileCPU(b, metrics, fmt.Sprintf("%s-%d-noop", s.name, n))
	res.noop = noChangeReconcile(b, ns, n)
	stopProfile()
	hc2 := procUsage(b, hc.PID())
	res.noop.cpu = hc2.cpu - hc1.cpu
	byMethod, res.noop.requests = requestDelta(req1, requestCounts(b, metrics))
	b.Logf("%s: no-change reconcile of %d in %s; API requests by method %v", s.name, n, res.noop.time.Round(time.Millisecond), sorted(byMethod))
	res.hc.peakRSSMiB = hc2.peakRSSMiB
	res.mem = stopMem()
	b.Logf("%s: peak RSS %.1f MiB; %s", s.name, res.hc.peakRSSMiB, res.mem)
	return res
}

// createReleases creates the HelmRepository podinfo (repoURL) and n
// HelmReleases podinfo-<i> of its chart in ns, as a Flux user writes them
// (spec.chart, default install wait), labelled for the stack name.
func createReleases(b *testing.B, name, ns string, n int, repoURL string) {
	ctx := context.Background()
	hour := metav1.Duration{Duration: time.Hour}
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
		Spec:       sourcev1.HelmRepositorySpec{URL: repoURL, Interval: hour},
	}
	if err := env.Client.Create(ctx, repo); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		hr := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("podinfo-%d", i), Namespace: ns,
				Labels: map[string]string{stackLabel: name}},
			Spec: helmv2.HelmReleaseSpec{
				Interval: hour,
				Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
					Chart:             "podinfo",
					SourceRef:         &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: repo.Name},
					OCIRepositorySpec: sourcev1.OCIRepositorySpec{Interval: &hour},
				}},
			},
		}
		if err := env.Client.Create(ctx, hr); err != nil {
			b.Fatal(err)
		}
	}
}

// waitReady polls until the n HelmReleases of ns are Ready for their
// generation, failing b after readyTimeout from start.
func waitReady(b *testing.B, ns string, n int, start time.Time) {
	ctx := context.Background()
	for {
		list := &helmv2.HelmReleaseList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		ready, notReady := 0, ""
		for i := range list.Items {
			hr := &list.Items[i]
			if c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition); c != nil &&
				c.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation {
				ready++
			} else if notReady == "" {
				notReady = fmt.Sprintf("%s: %v", hr.Name, hr.Status.Conditions)
			}
		}
		if ready == n {
			return
		}
		if time.Since(start) > readyTimeout {
			b.Fatalf("%d of %d HelmReleases Ready after %s; e.g. %s", ready, n, readyTimeout, notReady)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sorted prints m's entries in key order.
func sorted(m map[string]float64) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += fmt.Sprintf(" %s=%.0f", k, m[k])
	}
	return s
}
