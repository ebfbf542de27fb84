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
	pods, local := slices.Sorted(slices.Values(r.pods)), slices.Sorted(slices.Values(r.local))
	b.ReportMetric(r.install.Seconds(), "install-s")
	for _, c := range controllers {
		b.ReportMetric(r.idle[c], short[c]+"-idle-MiB")
		b.ReportMetric(r.loaded[c], short[c]+"-loaded-MiB")
	}
	b.ReportMetric(r.ksReady.Seconds(), "ks-ready-s")
	b.ReportMetric(pods[0].Seconds(), "commit-pods-min-s")
	b.ReportMetric(median(pods).Seconds(), "commit-pods-median-s")
	b.ReportMetric(local[0].Seconds(), "commit-local-min-s")
	b.ReportMetric(median(local).Seconds(), "commit-local-median-s")
	b.ReportMetric(pods[0].Seconds()/local[0].Seconds(), "ratio-commit-pods/local-min")
	b.ReportMetric(median(pods).Seconds()/median(local).Seconds(), "ratio-commit-pods/local-median")

	var t strings.Builder
	fmt.Fprintf(&t, "Eddy on a real node (node profile; load average %s at start, %s at end)\n", r.loadStart, r.loadEnd)
	fmt.Fprintf(&t, "eddy install --registry … → the 4 controllers' pods Ready: %.1f s\n", r.install.Seconds())
	fmt.Fprintf(&t, "GitRepository + %d Kustomizations (%d ConfigMaps each) + the application's, created → all Ready: %.1f s\n",
		kustomizations, configMapsPerKs, r.ksReady.Seconds())
	fmt.Fprintf(&t, "%-26s %12s %22s %24s\n", "memory peak, MiB", "pod: idle", fmt.Sprintf("pod: %d Kustomizations", kustomizations),
		"local process (VmHWM)")
	for _, c := range controllers {
		fmt.Fprintf(&t, "%-26s %12.1f %22.1f %24.1f\n", c, r.idle[c], r.loaded[c], r.localRSS[c])
	}
	fmt.Fprintf(&t, "%-26s %8s %8s %8s   %s\n", fmt.Sprintf("commit → Ready (%d runs), s", r.reps), "min", "median", "max", "each, in order")
	fmt.Fprintf(&t, "%-26s %8.2f %8.2f %8.2f   %s\n", "Eddy as pods", pods[0].Seconds(), median(pods).Seconds(),
		pods[len(pods)-1].Seconds(), seconds(r.pods))
	fmt.Fprintf(&t, "%-26s %8.2f %8.2f %8.2f   %s\n", "Eddy as local processes", local[0].Seconds(), median(local).Seconds(),
		local[len(local)-1].Seconds(), seconds(r.local))
	fmt.Fprintf(&t, "%-26s %8.2f %8.2f\n", "ratio pods / local", pods[0].Seconds()/local[0].Seconds(),
		median(pods).Seconds()/median(local).Seconds())
	// Printed, not logged: go test cuts a benchmark's log to a few lines.
	fmt.Println(t.String())
}

// median of sorted ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

func seconds(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(s, " ")
}
