package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var baselineOnly = flag.Bool("baseline-only", false,
	"run only the Helm SDK install loop, without the controllers (e.g. before helm-controller reconciles)")

const (
	// concurrency is helm-controller's --concurrent default (Flux's), used by
	// the controller and by the baseline's workers alike.
	concurrency = 4
	// installTimeout is a HelmRelease's default spec.timeout, the baseline's
	// Helm wait timeout.
	installTimeout = 5 * time.Minute
	// readyTimeout bounds each phase: the benchmark fails rather than hangs.
	readyTimeout = 20 * time.Minute
	// trailing is how long writes are still counted after every HelmRelease
	// reported the no-change reconcile handled, to catch a write that follows
	// the status patch; a measurement window, not an assertion.
	trailing = 5 * time.Second
	// userHZ is the unit of utime and stime in /proc/<pid>/stat (proc(5):
	// clock ticks, USER_HZ, which Linux fixes at 100 for user space).
	userHZ = 100
)

// BenchmarkHelmReleases measures, on the full profile with source-controller
// and helm-controller running as processes (their built binaries):
//
//   - controller-s: from creating one HelmRepository (podinfo's chart served
//     over HTTP) and N HelmReleases of it (spec.chart, as a Flux user writes
//     them, default install wait) until every HelmRelease is Ready for its
//     generation; cpu-s and peak-rss-MiB are helm-controller's CPU over that
//     window (utime+stime, /proc/<pid>/stat) and its peak RSS (VmHWM,
//     /proc/<pid>/status, read before it stops); sc-cpu-s and
//     sc-peak-rss-MiB the same for source-controller;
//   - noop-*: a no-change reconcile of all N (reconcile.fluxcd.io/requestedAt)
//     until each reports it in status.lastHandledReconcileAt, plus a trailing
//     5 s: new Helm storage Secrets (release versions; want 0), writes to
//     storage Secrets, HelmRelease writes beyond the request annotation and
//     the status patch recording it (Flux, too, patches Reconciling
//     "Fulfilling prerequisites" first: 1 per release), HelmChart and
//     HelmRepository writes, helm-controller's CPU;
//   - baseline-helm-sdk-s: after the controllers stopped, the same N installs
//     of the same chart with the Helm SDK (action.Install, secrets storage,
//     Wait with the same timeout) by as many workers as helm-controller's
//     --concurrent, in another namespace; baseline-cpu-s and
//     baseline-peak-rss-MiB are this process's;
//   - ratio-controller/baseline: controller-s / baseline-helm-sdk-s.
//
// -baseline-only (after -args) runs the baseline alone. Run it with
// -benchtime 1x.
func BenchmarkHelmReleases(b *testing.B) {
	chart := helmtest.PackageChart(b, helmtest.PodinfoChartDir(b)) // skips without shared/
	var sc, hc string
	if !*baselineOnly {
		bin := b.TempDir()
		var err error
		if sc, err = testenv.BuildController("source-controller", bin); err != nil {
			b.Fatal(err)
		}
		if hc, err = testenv.BuildController("helm-controller", bin); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{100} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				benchHelmReleases(b, n, chart, sc, hc)
			}
		})
	}
}

func benchHelmReleases(b *testing.B, n int, chart, scExe, hcExe string) {
	b.Logf("load average at start: %s", loadavg())
	b.ResetTimer()
	var ctrl controllerResult
	if !*baselineOnly {
		ctrl = runControllers(b, n, chart, scExe, hcExe)
	}
	base := runBaseline(b, n, chart)
	b.StopTimer()
	b.Logf("load average at end: %s", loadavg())

	if !*baselineOnly {
		b.ReportMetric(ctrl.ready.Seconds(), "controller-s")
		b.ReportMetric(ctrl.ready.Seconds()/base.time.Seconds(), "ratio-controller/baseline")
		b.ReportMetric(ctrl.hc.cpu.Seconds(), "cpu-s")
		b.ReportMetric(ctrl.hc.peakRSSMiB, "peak-rss-MiB")
		b.ReportMetric(ctrl.sc.cpu.Seconds(), "sc-cpu-s")
		b.ReportMetric(ctrl.sc.peakRSSMiB, "sc-peak-rss-MiB")
		b.ReportMetric(ctrl.noop.time.Seconds(), "noop-s")
		b.ReportMetric(ctrl.noop.cpu.Seconds(), "noop-cpu-s")
		b.ReportMetric(float64(ctrl.noop.newReleaseVersions), "noop-new-release-versions")
		b.ReportMetric(float64(ctrl.noop.storageWrites), "noop-storage-secret-writes")
		b.ReportMetric(float64(ctrl.noop.hrExtraWrites), "noop-hr-extra-writes")
		b.ReportMetric(float64(ctrl.noop.chartWrites), "noop-helmchart-writes")
		b.ReportMetric(float64(ctrl.noop.repoWrites), "noop-helmrepo-writes")
	}
	b.ReportMetric(base.time.Seconds(), "baseline-helm-sdk-s")
	b.ReportMetric(base.cpu.Seconds(), "baseline-cpu-s")
	if base.peakRSSMiB > 0 {
		b.ReportMetric(base.peakRSSMiB, "baseline-peak-rss-MiB")
	}
}

// usage is a process's CPU time and peak resident set size.
type usage struct {
	cpu        time.Duration
	peakRSSMiB float64
}

type controllerResult struct {
	ready  time.Duration
	hc, sc usage // over the install phase (CPU) and up to its end (peak RSS)
	noop   noopResult
}

type noopResult struct {
	time               time.Duration
	cpu                time.Duration // helm-controller's
	newReleaseVersions int           // Helm storage Secrets that did not exist before
	storageWrites      int           // creates, updates and deletes of Helm storage Secrets
	hrExtraWrites      int           // HelmRelease writes beyond the request and the status patch
	chartWrites        int
	repoWrites         int
}

// runControllers runs source-controller and helm-controller, installs n
// HelmReleases until Ready, runs the no-change reconcile and stops both
// controllers (so the baseline runs alone).
func runControllers(b *testing.B, n int, chart, scExe, hcExe string) controllerResult {
	ctx := context.Background()
	ns := testenv.NewNamespace(b, env.Client, "bench-hr-")
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
	hc, err := testenv.StartController(env, hcExe, filepath.Join(work, "helm-controller.log"),
		fmt.Sprintf("--concurrent=%d", concurrency))
	if err != nil {
		b.Fatal(err)
	}
	defer hc.Stop()
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("source-controller log (tail):\n%s", tail(sc.LogPath, 40))
			b.Logf("helm-controller log (tail):\n%s", tail(hc.LogPath, 60))
		}
	})

	var res controllerResult
	hc0, sc0 := procUsage(b, hc.PID()), procUsage(b, sc.PID())
	start := time.Now()
	hour := metav1.Duration{Duration: time.Hour}
	repo := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
		Spec:       sourcev1.HelmRepositorySpec{URL: srv.URL(), Interval: hour},
	}
	if err := env.Client.Create(ctx, repo); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		hr := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("podinfo-%d", i), Namespace: ns},
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
			break
		}
		if time.Since(start) > readyTimeout {
			b.Fatalf("%d of %d HelmReleases Ready after %s; e.g. %s", ready, n, readyTimeout, notReady)
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.ready = time.Since(start)
	hc1, sc1 := procUsage(b, hc.PID()), procUsage(b, sc.PID())
	res.hc = usage{cpu: hc1.cpu - hc0.cpu, peakRSSMiB: hc1.peakRSSMiB}
	res.sc = usage{cpu: sc1.cpu - sc0.cpu, peakRSSMiB: sc1.peakRSSMiB}

	res.noop = noChangeReconcile(b, ns, n)
	res.noop.cpu = procUsage(b, hc.PID()).cpu - hc1.cpu
	return res
}

// noChangeReconcile requests a reconcile of the n HelmReleases in ns and
// counts, through watches opened before the request, the writes until each
// reports it handled, plus the trailing window.
func noChangeReconcile(b *testing.B, ns string, n int) noopResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	helmOwned := client.MatchingLabels{"owner": "helm"}
	secretsBefore := &corev1.SecretList{}
	if err := wc.List(ctx, secretsBefore, client.InNamespace(ns), helmOwned); err != nil {
		b.Fatal(err)
	}
	// Each watch starts at the resourceVersion of a list taken now, so no
	// write after this point is missed.
	open := func(list client.ObjectList, opts ...client.ListOption) watch.Interface {
		if err := wc.List(ctx, list, append(opts, client.InNamespace(ns))...); err != nil {
			b.Fatal(err)
		}
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := wc.Watch(ctx, list, append(opts, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	hrW := open(&helmv2.HelmReleaseList{})
	defer hrW.Stop()
	chartW := open(&sourcev1.HelmChartList{})
	defer chartW.Stop()
	repoW := open(&sourcev1.HelmRepositoryList{})
	defer repoW.Stop()
	secretW := open(&corev1.SecretList{}, helmOwned)
	defer secretW.Stop()

	var res noopResult
	token := time.Now().Format(time.RFC3339Nano)
	patch := client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token))
	start := time.Now()
	for i := range n {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("podinfo-%d", i), Namespace: ns}}
		if err := env.Client.Patch(ctx, hr, patch); err != nil {
			b.Fatal(err)
		}
	}

	hrWrites := map[string]int{}
	handled := map[string]bool{}
	var trailingEnd <-chan time.Time // nil (never ready) until all are handled
	timeout := time.After(readyTimeout)
	for done := false; !done; {
		select {
		case ev, ok := <-hrW.ResultChan():
			hr, isHR := ev.Object.(*helmv2.HelmRelease)
			if !ok || !isHR {
				b.Fatalf("HelmRelease watch ended: %v", watchErr(ev))
			}
			hrWrites[hr.Name]++
			if hr.Status.LastHandledReconcileAt == token && !handled[hr.Name] {
				handled[hr.Name] = true
				if len(handled) == n {
					res.time = time.Since(start)
					trailingEnd = time.After(trailing)
				}
			}
		case ev, ok := <-chartW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("HelmChart watch ended: %v", watchErr(ev))
			}
			res.chartWrites++
		case ev, ok := <-repoW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("HelmRepository watch ended: %v", watchErr(ev))
			}
			res.repoWrites++
		case ev, ok := <-secretW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("Secret watch ended: %v", watchErr(ev))
			}
			res.storageWrites++
		case <-trailingEnd:
			done = true
		case <-timeout:
			b.Fatalf("%d of %d HelmReleases handled reconcile request %s after %s", len(handled), n, token, readyTimeout)
		}
	}
	// Two writes per HelmRelease are expected: the request annotation and
	// the status patch recording lastHandledReconcileAt.
	for _, w := range hrWrites {
		res.hrExtraWrites += max(0, w-2)
	}

	secretsAfter := &corev1.SecretList{}
	if err := wc.List(ctx, secretsAfter, client.InNamespace(ns), helmOwned); err != nil {
		b.Fatal(err)
	}
	before := map[string]bool{}
	for _, s := range secretsBefore.Items {
		before[s.Name] = true
	}
	for _, s := range secretsAfter.Items {
		if !before[s.Name] {
			res.newReleaseVersions++
		}
	}
	return res
}

func watchErr(ev watch.Event) error {
	if ev.Type == watch.Error {
		if s, ok := ev.Object.(*metav1.Status); ok {
			return errors.New(s.Message)
		}
		return fmt.Errorf("error event %v", ev.Object)
	}
	return errors.New("channel closed")
}

type baselineResult struct {
	time       time.Duration
	cpu        time.Duration // this process's
	peakRSSMiB float64       // this process's, since the baseline started; 0 if unknown
}

// runBaseline installs the chart n times with Helm's install action, as
// podinfo-<i> in a new namespace, by concurrency workers each with its own
// action configuration (secrets storage), waiting for each release's
// resources with the HelmRelease default timeout, as helm-controller does by
// default. The chart archive is loaded once per install, as a controller
// loads a fetched artifact.
func runBaseline(b *testing.B, n int, chart string) baselineResult {
	ctx := context.Background()
	ns := testenv.NewNamespace(b, env.Client, "bench-sdk-")
	data, err := os.ReadFile(chart)
	if err != nil {
		b.Fatal(err)
	}
	// Resetting the high-water mark (proc(5) clear_refs, value 5) makes
	// VmHWM this phase's peak; where it is not allowed the metric is left out.
	hwmReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	cpu0 := cpuSelf(b)
	start := time.Now()
	cfgs := make([]*action.Configuration, concurrency)
	for i := range cfgs {
		cfgs[i] = helmtest.ActionConfig(b, env.KubeconfigPath, ns)
	}
	work := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := install(ctx, cfg, ns, fmt.Sprintf("podinfo-%d", i), data); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	res := baselineResult{time: time.Since(start)}
	cpu1 := cpuSelf(b)
	res.cpu = cpu1 - cpu0
	if hwmReset {
		res.peakRSSMiB = procStatusMiB(b, "self", "VmHWM")
	}
	if len(errs) > 0 {
		b.Fatalf("%d of %d Helm installs failed, e.g.: %v", len(errs), n, errs[0])
	}
	deployed := 0
	for _, r := range helmtest.Releases(b, env.KubeconfigPath, ns) {
		if r.Info.Status == release.StatusDeployed {
			deployed++
		}
	}
	if deployed != n {
		b.Fatalf("%d of %d baseline releases deployed", deployed, n)
	}
	return res
}

func install(ctx context.Context, cfg *action.Configuration, ns, name string, archive []byte) error {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.Namespace, in.ReleaseName = ns, name
	in.Wait, in.WaitForJobs, in.Timeout = true, true, installTimeout
	_, err = in.RunWithContext(ctx, ch, map[string]any{})
	return err
}

// procUsage reads the CPU time (utime+stime of /proc/<pid>/stat) and the
// peak RSS (VmHWM of /proc/<pid>/status) of a running process.
func procUsage(b *testing.B, pid int) usage {
	b.Helper()
	p := strconv.Itoa(pid)
	stat, err := os.ReadFile(filepath.Join("/proc", p, "stat"))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name start at field 3 (state).
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		b.Fatalf("/proc/%s/stat: %q", p, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatalf("/proc/%s/stat: %v", p, err)
	}
	return usage{
		cpu:        time.Duration(utime+stime) * time.Second / userHZ,
		peakRSSMiB: procStatusMiB(b, p, "VmHWM"),
	}
}

// procStatusMiB reads a "kB" field of /proc/<pid>/status in MiB.
func procStatusMiB(b *testing.B, pid, field string) float64 {
	b.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("/proc/%s/status %s: %v", pid, field, err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("/proc/%s/status has no %s", pid, field)
	return 0
}

// cpuSelf is this process's CPU time (getrusage RUSAGE_SELF, user+system).
func cpuSelf(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
