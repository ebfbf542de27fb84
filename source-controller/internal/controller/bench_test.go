package controller

import (
	"syscall"
	"testing"
	"time"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNoChangeReconciles measures the CPU time this process (the
// controller and the test client) spends on 100 reconciles of an unchanged
// commit, which list refs and stop, and as the baseline in the same run 100
// reconciles that each find a new commit and so fetch and archive.
func BenchmarkNoChangeReconciles(b *testing.B) {
	ns := newNamespace(b)
	files := map[string]string{}
	for i := range 200 {
		files["apps/app-"+string(rune('a'+i%26))+"/"+time.Duration(i).String()+".yaml"] = "kind: ConfigMap\ndata:\n  key: value\n"
	}
	r := newRepo(b, files)
	obj := waitReady(b, newGitRepository(b, ns, "bench", r.url(), nil))
	var steady, changing time.Duration
	b.ResetTimer()
	for range b.N {
		start := cpuTime(b)
		for range 100 {
			requestReconcile(b, obj)
		}
		steady += cpuTime(b) - start

		b.StopTimer()
		var commitCPU time.Duration
		start = cpuTime(b)
		for i := range 100 {
			c0 := cpuTime(b)
			r.commit(b, map[string]string{"apps/counter.yaml": "n: " + time.Duration(i+1).String() + "\n"}, "bump")
			commitCPU += cpuTime(b) - c0
			requestReconcile(b, obj)
		}
		changing += cpuTime(b) - start - commitCPU
		b.StartTimer()
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((steady / n).Milliseconds()), "cpu-ms/100-no-change")
	b.ReportMetric(float64((changing / n).Milliseconds()), "cpu-ms/100-new-commit")
	b.ReportMetric(float64(steady)/float64(changing), "ratio-no-change/new-commit")
}
