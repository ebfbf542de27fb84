package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
)

// usage is a process's CPU time and peak resident set size.
type usage struct {
	cpu        time.Duration
	peakRSSMiB float64
}

// procUsage reads the CPU time (testenv.ProcCPU) and the peak RSS (VmHWM
// of /proc/<pid>/status) of a running process.
func procUsage(b *testing.B, pid int) usage {
	b.Helper()
	cpu, err := testenv.ProcCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return usage{cpu: cpu, peakRSSMiB: testenv.ProcStatusMiB(b, strconv.Itoa(pid), "VmHWM")}
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

// requestCounts are a controller's API requests so far by HTTP method, from
// client-go's rest_client_requests_total on its metrics address (every
// client-go client of the process counts there, Helm's included).
func requestCounts(b *testing.B, metricsAddr string) map[string]float64 {
	b.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	const name = "rest_client_requests_total{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, name), "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			b.Fatalf("%s: %v", line, err)
		}
		method := "?"
		for l := range strings.SplitSeq(labels, ",") {
			if m, ok := strings.CutPrefix(l, `method="`); ok {
				method = strings.TrimSuffix(m, `"`)
			}
		}
		out[method] += v
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// requestDelta is after − before by method, and its total.
func requestDelta(before, after map[string]float64) (map[string]float64, float64) {
	d, total := map[string]float64{}, 0.0
	for m, v := range after {
		if v -= before[m]; v != 0 {
			d[m] = v
			total += v
		}
	}
	return d, total
}

// profileCPU, when EDDY_BENCH_HELM_PROFILE names a directory, saves
// consecutive 10 s CPU profiles of the process serving /debug/pprof on
// metricsAddr as <prefix>-<i>.pprof there until the returned stop is
// called (merge them with `go tool pprof -proto a.pprof b.pprof ...`).
// Both helm-controllers serve the profiles on their metrics address.
func profileCPU(b *testing.B, metricsAddr, prefix string) (stop func()) {
	dir := os.Getenv("EDDY_BENCH_HELM_PROFILE")
	if dir == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			if err := saveProfile(metricsAddr, "profile?seconds=10", filepath.Join(dir, fmt.Sprintf("%s-%02d.pprof", prefix, i))); err != nil {
				b.Logf("CPU profile of %s: %v", prefix, err)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// saveHeap saves, with EDDY_BENCH_HELM_PROFILE set, the heap profile of
// the process serving /debug/pprof on metricsAddr as <name>.pprof there.
func saveHeap(b *testing.B, metricsAddr, name string) {
	if dir := os.Getenv("EDDY_BENCH_HELM_PROFILE"); dir != "" {
		if err := saveProfile(metricsAddr, "heap", filepath.Join(dir, name+".pprof")); err != nil {
			b.Logf("heap profile %s: %v", name, err)
		}
	}
}

// saveProfile saves /debug/pprof/<what> of metricsAddr at path.
func saveProfile(metricsAddr, what, path string) error {
	resp, err := http.Get("http://" + metricsAddr + "/debug/pprof/" + what)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// memSplit is the largest anonymous and file-backed resident memory a
// process was seen with (testenv.ResidentSplit), the same at the first
// sample (before any HelmRelease exists) and, at the end, the resident
// pages of its executable file (testenv.ExeMappings), in MiB.
type memSplit struct {
	anon, file, exe    float64
	anon0, file0       float64
	peakAt             time.Duration // since the first sample, of the largest anonymous
	text, rodata, data float64       // the executable's mappings (r-x, r--, rw-), resident
}

func (m memSplit) String() string {
	return fmt.Sprintf("largest anonymous %.1f MiB (%s in), file-backed %.1f MiB; at the start %.1f and %.1f MiB; "+
		"executable resident %.1f MiB (text %.1f, read-only data %.1f, data %.1f)",
		m.anon, m.peakAt.Round(time.Second), m.file, m.anon0, m.file0, m.exe, m.text, m.rodata, m.data)
}

// sampleMemory samples pid's resident memory split every 250 ms until the
// returned stop is called, which returns the largest parts seen. With
// EDDY_BENCH_HELM_PROFILE set, the heap profile of the process serving
// /debug/pprof on metricsAddr is saved as <name>.pprof whenever its
// anonymous memory has grown by 4 MiB since the last one: the last one saved
// is the heap near the peak.
func sampleMemory(b *testing.B, pid int, metricsAddr, name string) (stop func() memSplit) {
	var m memSplit
	saved, start := 0.0, time.Now()
	sample := func() {
		anon, file, err := testenv.ResidentSplit(pid)
		if err != nil {
			return // gone: the last sample stands
		}
		if m.anon == 0 {
			m.anon0, m.file0 = anon, file
		}
		if anon > m.anon {
			m.anon, m.peakAt = anon, time.Since(start)
		}
		m.file = max(m.file, file)
		if anon >= saved+4 {
			saved = anon
			saveHeap(b, metricsAddr, name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for t := time.NewTicker(250 * time.Millisecond); ; {
			sample()
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return func() memSplit {
		cancel()
		<-done
		sample()
		ms, err := testenv.ExeMappings(pid)
		if err != nil {
			b.Logf("executable mappings of %d: %v", pid, err)
		}
		for _, mp := range ms {
			resident := mp.Rss - mp.Anonymous
			m.exe += resident
			switch {
			case strings.Contains(mp.Perms, "x"):
				m.text += resident
			case strings.Contains(mp.Perms, "w"):
				m.data += resident
			default:
				m.rodata += resident
			}
		}
		return m
	}
}
