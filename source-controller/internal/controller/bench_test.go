package controller

import (
	"fmt"
	"net"
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
	obj := waitReady(b, newGitRepository(b, ns, "bench", r.URL(), nil))
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
			r.MustCommit(b, map[string]string{"apps/counter.yaml": "n: " + time.Duration(i+1).String() + "\n"}, "bump")
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

// BenchmarkSSHTimeout measures how long a GitRepository with a 1s
// spec.timeout takes to report Ready=False against an SSH server that
// accepts and never answers, and as the baseline in the same run against a
// port that refuses the connection at once; the difference is what the
// timeout holds a worker for (about 1s when the timeout is kept).
func BenchmarkSSHTimeout(b *testing.B) {
	ns := newNamespace(b)
	silent := silentSSHServer(b, ns)
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		return "ssh://git@" + l.Addr().String() + "/x.git"
	}()
	var silentTime, refusedTime time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j, c := range []struct {
			url   string
			total *time.Duration
		}{{silent, &silentTime}, {refused, &refusedTime}} {
			start := time.Now()
			waitNotReady(b, newGitRepository(b, ns, fmt.Sprintf("ssh-%d-%d", i, j), c.url, withSSHTimeout))
			*c.total += time.Since(start)
		}
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((silentTime / n).Milliseconds()), "ms/silent-server")
	b.ReportMetric(float64((refusedTime / n).Milliseconds()), "ms/refused")
	b.ReportMetric(float64(silentTime)/float64(refusedTime), "ratio-silent/refused")
}
