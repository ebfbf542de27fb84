package nodebench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// report reports r's figures as metrics and prints them as a table.
func report(b *testing.B, r result) {
	pods, local := summarize(r.pods), summarize(r.local)
	b.ReportMetric(r.install.Seconds(), "install-s")
	for _, c := range controllers {
		b.ReportMetric(r.idle[c], short[c]+"-idle-MiB")
		b.ReportMetric(r.loaded[c], short[c]+"-loaded-MiB")
	}
	b.ReportMetric(r.ksReady.Seconds(), "ks-ready-s")
	b.ReportMetric(pods.min.Seconds(), "commit-pods-min-s")
	b.ReportMetric(pods.median.Seconds(), "commit-pods-median-s")
	b.ReportMetric(local.min.Seconds(), "commit-local-min-s")
	b.ReportMetric(local.median.Seconds(), "commit-local-median-s")
	b.ReportMetric(pods.min.Seconds()/local.min.Seconds(), "ratio-commit-pods/local-min")
	b.ReportMetric(pods.median.Seconds()/local.median.Seconds(), "ratio-commit-pods/local-median")

	var t strings.Builder
	fmt.Fprintf(&t, "Eddy on a real node (node profile; load average %s at start, %s at end)\n", r.loadStart, r.loadEnd)
	fmt.Fprintf(&t, "eddy install --registry … → the 4 controllers' pods Ready: %.1f s\n", r.install.Seconds())
	fmt.Fprintf(&t, "2 GitRepositories + %d Kustomizations (%d ConfigMaps each) + the application's, created → all Ready: %.1f s\n",
		kustomizations, configMapsPerKs, r.ksReady.Seconds())
	fmt.Fprintf(&t, "%-24s %14s %14s %14s %14s\n", "memory peak, MiB", "pod cgroup:", "pod cgroup:", "pod process", "local process")
	fmt.Fprintf(&t, "%-24s %14s %14s %14s %14s\n", "", "idle", fmt.Sprintf("%d Ks", kustomizations), "VmHWM", "VmHWM")
	for _, c := range controllers {
		fmt.Fprintf(&t, "%-24s %14.1f %14.1f %14.1f %14.1f\n", c, r.idle[c], r.loaded[c], r.podRSS[c], r.localRSS[c])
	}
	fmt.Fprintf(&t, "%-24s %6s %6s %6s | %9s %9s | %s\n", fmt.Sprintf("commit → Ready (%d), s", r.reps), "min", "median", "max",
		"artifact", "applied", "each, in order")
	fmt.Fprintf(&t, "%-24s %6s %6s %6s | %9s %9s |\n", "", "", "", "", "(median)", "(median)")
	for _, m := range []struct {
		name string
		s    summary
	}{{"Eddy as pods", pods}, {"Eddy as local processes", local}} {
		fmt.Fprintf(&t, "%-24s %6.2f %6.2f %6.2f | %9.2f %9.2f | %s\n", m.name, m.s.min.Seconds(), m.s.median.Seconds(),
			m.s.max.Seconds(), m.s.artifact.Seconds(), m.s.applied.Seconds(), m.s.each)
	}
	fmt.Fprintf(&t, "%-24s %6.2f %6.2f %6s | %9.2f %9.2f |\n", "ratio pods / local", pods.min.Seconds()/local.min.Seconds(),
		pods.median.Seconds()/local.median.Seconds(), "", pods.artifact.Seconds()/local.artifact.Seconds(),
		pods.applied.Seconds()/local.applied.Seconds())
	// Printed, not logged: go test cuts a benchmark's log to a few lines.
	fmt.Println(t.String())
}

// summary sums up one mode's commits: min, median and max of push → pod
// Ready, the medians of push → artifact and push → applied, each Ready time.
type summary struct {
	min, median, max  time.Duration
	artifact, applied time.Duration
	each              string
}

func summarize(cts []commitTimes) summary {
	var ready, artifact, applied []time.Duration
	var each []string
	for _, ct := range cts {
		ready, artifact, applied = append(ready, ct.ready), append(artifact, ct.artifact), append(applied, ct.applied)
		each = append(each, fmt.Sprintf("%.2f", ct.ready.Seconds()))
	}
	slices.Sort(ready)
	return summary{min: ready[0], median: median(ready), max: ready[len(ready)-1],
		artifact: median(artifact), applied: median(applied), each: strings.Join(each, " ")}
}

// median of ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	ds = slices.Sorted(slices.Values(ds))
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}
