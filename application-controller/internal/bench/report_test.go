package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// report gives the figures of one run as benchmark metrics and prints them
// as a table on stdout, each ratio Application over Kustomization.
func report(b *testing.B, n int, app, ks phase, ref refresh) {
	b.ReportMetric(app.time.Seconds(), "app-s")
	b.ReportMetric(app.ctrl.cpu.Seconds(), "app-cpu-s")
	b.ReportMetric(app.ctrl.peakRSSMiB, "app-peak-rss-MiB")
	b.ReportMetric(app.source.cpu.Seconds(), "app-sc-cpu-s")
	b.ReportMetric(total(app.requests)/float64(n), "app-req/app")
	b.ReportMetric(ks.time.Seconds(), "ks-s")
	b.ReportMetric(ks.ctrl.cpu.Seconds(), "ks-cpu-s")
	b.ReportMetric(ks.ctrl.peakRSSMiB, "ks-peak-rss-MiB")
	b.ReportMetric(ks.source.cpu.Seconds(), "ks-sc-cpu-s")
	b.ReportMetric(total(ks.requests)/float64(n), "ks-req/ks")
	b.ReportMetric(app.time.Seconds()/ks.time.Seconds(), "ratio-time-app/ks")
	b.ReportMetric(app.ctrl.cpu.Seconds()/ks.ctrl.cpu.Seconds(), "ratio-cpu-app/ks")
	b.ReportMetric(app.ctrl.peakRSSMiB/ks.ctrl.peakRSSMiB, "ratio-rss-app/ks")

	reqs, writes := total(ref.client), 0.0
	for k, v := range ref.client {
		if isWrite(strings.Fields(k)[0]) {
			writes += v
		}
	}
	api := total(ref.apiWrites) - ref.ownPatches
	nf := float64(n)
	b.ReportMetric(ref.time.Seconds(), "refresh-s")
	b.ReportMetric(ref.cpu.Seconds(), "refresh-cpu-s")
	b.ReportMetric(reqs/nf, "refresh-req/app")
	b.ReportMetric(writes/nf, "refresh-client-writes/app")
	b.ReportMetric(api/nf, "refresh-apiserver-writes/app")

	if heal := slices.Sorted(slices.Values(ref.heal)); len(heal) > 0 {
		b.ReportMetric(heal[len(heal)/2].Seconds(), "self-heal-median-s")
		b.ReportMetric(heal[len(heal)-1].Seconds(), "self-heal-max-s")
	}
	b.ReportMetric(float64(app.fetches), "app-git-fetches")

	var t strings.Builder
	fmt.Fprintf(&t, "N=%d × %d ConfigMaps, one Git repository\n", n, objects)
	fmt.Fprintf(&t, "%-34s %10s %8s %14s %10s %14s\n", "", "time s", "CPU s", "peak RSS MiB", "sc CPU s", "sc peak MiB")
	row := func(name string, p phase) {
		fmt.Fprintf(&t, "%-34s %10.1f %8.2f %14.1f %10.2f %14.1f\n", name, p.time.Seconds(), p.ctrl.cpu.Seconds(),
			p.ctrl.peakRSSMiB, p.source.cpu.Seconds(), p.source.peakRSSMiB)
	}
	row("application-controller (Synced+Healthy)", app)
	row("kustomize-controller (Ready)", ks)
	fmt.Fprintf(&t, "%-34s %10.2f %8.2f %14.2f\n", "ratio app / ks", app.time.Seconds()/ks.time.Seconds(),
		app.ctrl.cpu.Seconds()/ks.ctrl.cpu.Seconds(), app.ctrl.peakRSSMiB/ks.ctrl.peakRSSMiB)
	fmt.Fprintf(&t, "RSS at the end (anonymous + file pages, MiB): application-controller %.1f + %.1f, kustomize-controller %.1f + %.1f\n",
		app.anonMiB, app.fileMiB, ks.anonMiB, ks.fileMiB)
	fmt.Fprintf(&t, "requests per app during the rollout: application-controller %.1f, kustomize-controller %.1f (client QPS 50, burst 300)\n",
		total(app.requests)/float64(n), total(ks.requests)/float64(n))
	fmt.Fprintf(&t, "  application-controller (method code): %s\n", format(app.requests))
	fmt.Fprintf(&t, "  kustomize-controller (method code): %s\n", format(ks.requests))
	fmt.Fprintf(&t, "  Git fetches of the repository during the rollout (%d Applications, one source): %d\n", n, app.fetches)
	fmt.Fprintf(&t, "  API server 404s and 409s over the rollout: Applications side %s; Kustomizations side %s\n",
		format(app.refused), format(ks.refused))
	fmt.Fprintf(&t, "no-change refresh of %d: %.1f s, %.2f CPU s; per app %.2f requests, %.2f client writes, %.2f API server writes\n",
		n, ref.time.Seconds(), ref.cpu.Seconds(), reqs/nf, writes/nf, api/nf)
	fmt.Fprintf(&t, "  controller requests (method code): %s\n", format(ref.client))
	fmt.Fprintf(&t, "  API server writes, not dry-run (incl. the benchmark's %.0f annotation patches): %s", ref.ownPatches, format(ref.apiWrites))
	fmt.Fprintf(&t, "\nwork queue empty %.1f s after the refresh's end; then self-heal after an edit of a Git-declared key, %d edits one at a time, in order: %s",
		ref.drained.Seconds(), len(ref.heal), durations(ref.heal))
	// Printed, not logged: go test cuts a benchmark's log to a few lines.
	fmt.Println(t.String())
}

// durations formats ds in milliseconds, e.g. "[212 230 …] ms".
func durations(ds []time.Duration) string {
	ms := make([]string, len(ds))
	for i, d := range ds {
		ms[i] = fmt.Sprint(d.Milliseconds())
	}
	return "[" + strings.Join(ms, " ") + "] ms"
}
