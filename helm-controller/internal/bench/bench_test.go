package bench

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
)

var baselineOnly = flag.Bool("baseline-only", false,
	"run only the Helm SDK install loop, without the controllers (e.g. before helm-controller reconciles)")

const (
	// concurrency is helm-controller's --concurrent default (Flux's), given
	// to both helm-controllers and used by the baseline's workers alike.
	concurrency = 4
	// installTimeout is a HelmRelease's default spec.timeout, the baseline's
	// Helm wait timeout.
	installTimeout = 5 * time.Minute
	// readyTimeout bounds each phase: the benchmark fails rather than hangs.
	readyTimeout = 30 * time.Minute
	// trailing is how long writes are still counted after every HelmRelease
	// reported the no-change reconcile handled, to catch a write that follows
	// the status patch; a measurement window, not an assertion.
	trailing = 5 * time.Second
)

// BenchmarkHelmReleases measures, on the full profile, Eddy's helm-controller
// beside Flux's own (v1.6.2, the built binary bin/flux-helm-controller that
// tools/flux-controllers.sh builds), in the same run on the same API
// server, both as processes with the same --concurrent, each with its own
// defaults otherwise, one after the other (Flux's first, so objects left in
// the cluster weigh on Eddy's), each in its own namespace and on its own
// HelmReleases (--watch-label-selector); Eddy's source-controller serves
// the HelmChart artifacts of both. For each N of EDDY_BENCH_HELM_N (a comma
// list, default "100,500") and each helm-controller (metrics without a
// prefix are Eddy's, flux-* Flux's):
//
//   - controller-s: from creating one HelmRepository (podinfo's chart served
//     over HTTP) and N HelmReleases of it (spec.chart, as a Flux user writes
//     them, default install wait) until every HelmRelease is Ready for its
//     generation; cpu-s is helm-controller's CPU over that window
//     (utime+stime, /proc/<pid>/stat), peak-rss-MiB its peak RSS (VmHWM,
//     /proc/<pid>/status, read before it stops), requests/release its API
//     requests over the window (client-go's rest_client_requests_total on
//     its metrics address) per HelmRelease; anon-MiB and file-MiB the
//     largest anonymous and file-backed parts of its resident memory seen
//     over both phases (/proc/<pid>/smaps_rollup, sampled every 250 ms),
//     exe-rss-MiB the resident pages of its executable file at the end
//     (/proc/<pid>/smaps); sc-cpu-s and sc-peak-rss-MiB
//     the same for source-controller;
//   - noop-*: a no-change reconcile of all N (reconcile.fluxcd.io/requestedAt)
//     until each reports it in status.lastHandledReconcileAt (noop-s), plus
//     a trailing 5 s: new Helm storage Secrets (release versions; want 0),
//     writes to storage Secrets, HelmRelease writes beyond the request
//     annotation and the status patch recording it (Flux, too, patches
//     Reconciling "Fulfilling prerequisites" first: 1 per release),
//     HelmChart and HelmRepository writes, helm-controller's CPU and API
//     requests per HelmRelease;
//   - ratio-eddy/flux-time, -cpu, -rss, -noop-time: Eddy's controller-s,
//     cpu-s, peak-rss-MiB and noop-s over Flux's;
//   - baseline-helm-sdk-s: after the controllers stopped, the same N installs
//     of the same chart with the Helm SDK (action.Install, secrets storage,
//     Wait with the same timeout) by as many workers as helm-controller's
//     --concurrent, in another namespace; baseline-cpu-s and
//     baseline-peak-rss-MiB are this process's;
//   - ratio-controller/baseline: controller-s / baseline-helm-sdk-s.
//
// EDDY_BENCH_HELM_STACKS ("flux,eddy" by default) chooses the
// helm-controllers, EDDY_BENCH_HELM_BASELINE=0 leaves the baseline out, and
// EDDY_BENCH_HELM_PROFILE=<dir> saves CPU profiles of each phase there
// (profileCPU), the heap profile once all are Ready and the one near the
// peak of anonymous memory (sampleMemory). -baseline-only (after -args) runs the baseline alone. Run
// it with -benchtime 1x.
func BenchmarkHelmReleases(b *testing.B) {
	chart := helmtest.PackageChart(b, helmtest.PodinfoChartDir(b)) // skips without shared/
	var sc string
	var stacks []stack
	if !*baselineOnly {
		bin := b.TempDir()
		var err error
		if sc, err = testenv.BuildController("source-controller", bin); err != nil {
			b.Fatal(err)
		}
		for _, name := range envList(b, "EDDY_BENCH_HELM_STACKS", "flux,eddy") {
			switch name {
			case "eddy":
				hc, err := testenv.BuildController("helm-controller", bin)
				if err != nil {
					b.Fatal(err)
				}
				stacks = append(stacks, stack{name: name, exe: hc, start: testenv.StartController})
			case "flux":
				stacks = append(stacks, stack{name: name, exe: testenv.FluxController(b, "helm-controller"),
					args: fluxArgs, start: testenv.StartFluxController})
			default:
				b.Fatalf("EDDY_BENCH_HELM_STACKS: unknown helm-controller %q (want eddy or flux)", name)
			}
		}
	}
	for _, v := range envList(b, "EDDY_BENCH_HELM_N", "100,500") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("EDDY_BENCH_HELM_N: %q is not a count", v)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				benchHelmReleases(b, n, chart, sc, stacks)
			}
		})
	}
}

// envList is the comma-separated list in the environment variable name, def
// when it is unset or empty.
func envList(b *testing.B, name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		b.Fatalf("%s=%q names nothing", name, v)
	}
	return out
}

func benchHelmReleases(b *testing.B, n int, chart, scExe string, stacks []stack) {
	b.Logf("load average at start: %s", loadavg())
	b.ResetTimer()
	var ctrl map[string]stackResult
	if !*baselineOnly {
		ctrl = runControllers(b, n, chart, scExe, stacks)
	}
	var base baselineResult
	if *baselineOnly || os.Getenv("EDDY_BENCH_HELM_BASELINE") != "0" {
		base = runBaseline(b, n, chart)
	}
	b.StopTimer()
	b.Logf("load average at end: %s", loadavg())

	for _, s := range stacks {
		reportStack(b, s.name, n, ctrl[s.name], base)
	}
	eddy, okE := ctrl["eddy"]
	flux, okF := ctrl["flux"]
	if okE && okF {
		b.ReportMetric(eddy.ready.Seconds()/flux.ready.Seconds(), "ratio-eddy/flux-time")
		b.ReportMetric(eddy.hc.cpu.Seconds()/flux.hc.cpu.Seconds(), "ratio-eddy/flux-cpu")
		b.ReportMetric(eddy.hc.peakRSSMiB/flux.hc.peakRSSMiB, "ratio-eddy/flux-rss")
		b.ReportMetric(eddy.noop.time.Seconds()/flux.noop.time.Seconds(), "ratio-eddy/flux-noop-time")
	}
	if base.time > 0 {
		b.ReportMetric(base.time.Seconds(), "baseline-helm-sdk-s")
		b.ReportMetric(base.cpu.Seconds(), "baseline-cpu-s")
		if base.peakRSSMiB > 0 {
			b.ReportMetric(base.peakRSSMiB, "baseline-peak-rss-MiB")
		}
	}
}

// reportStack reports one helm-controller's figures, Eddy's without a
// prefix (the names the benchmark has always had), Flux's as flux-*.
func reportStack(b *testing.B, name string, n int, r stackResult, base baselineResult) {
	p := ""
	if name != "eddy" {
		p = name + "-"
	}
	b.ReportMetric(r.ready.Seconds(), p+"controller-s")
	if base.time > 0 {
		if p == "" {
			b.ReportMetric(r.ready.Seconds()/base.time.Seconds(), "ratio-controller/baseline")
		} else {
			b.ReportMetric(r.ready.Seconds()/base.time.Seconds(), p+"controller/baseline")
		}
	}
	b.ReportMetric(r.hc.cpu.Seconds(), p+"cpu-s")
	b.ReportMetric(r.hc.peakRSSMiB, p+"peak-rss-MiB")
	b.ReportMetric(r.mem.anon, p+"anon-MiB")
	b.ReportMetric(r.mem.file, p+"file-MiB")
	b.ReportMetric(r.mem.exe, p+"exe-rss-MiB")
	b.ReportMetric(r.requests/float64(n), p+"requests/release")
	b.ReportMetric(r.sc.cpu.Seconds(), p+"sc-cpu-s")
	b.ReportMetric(r.sc.peakRSSMiB, p+"sc-peak-rss-MiB")
	b.ReportMetric(r.noop.time.Seconds(), p+"noop-s")
	b.ReportMetric(r.noop.cpu.Seconds(), p+"noop-cpu-s")
	b.ReportMetric(r.noop.requests/float64(n), p+"noop-requests/release")
	b.ReportMetric(float64(r.noop.newReleaseVersions), p+"noop-new-release-versions")
	b.ReportMetric(float64(r.noop.storageWrites), p+"noop-storage-secret-writes")
	b.ReportMetric(float64(r.noop.hrExtraWrites), p+"noop-hr-extra-writes")
	b.ReportMetric(float64(r.noop.chartWrites), p+"noop-helmchart-writes")
	b.ReportMetric(float64(r.noop.repoWrites), p+"noop-helmrepo-writes")
}
