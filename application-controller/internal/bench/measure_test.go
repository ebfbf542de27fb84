package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eddyops/eddy/pkg/testenv"
)

// usage is a process's CPU time (utime+stime of /proc/<pid>/stat) and
// peak resident set size (VmHWM of /proc/<pid>/status, MiB).
type usage struct {
	cpu        time.Duration
	peakRSSMiB float64
}

// procUsage reads the usage of the running process pid.
func procUsage(b *testing.B, pid int) usage {
	b.Helper()
	cpu, err := testenv.ProcCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return usage{cpu: cpu, peakRSSMiB: testenv.ProcStatusMiB(b, strconv.Itoa(pid), "VmHWM")}
}

// resetPeakRSS makes VmHWM of pid start again from its current RSS
// (proc(5) clear_refs, value 5); false where that is not allowed.
func resetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// samples are Prometheus samples: the metric name with its labels → value.
type samples map[string]float64

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// label returns the value of label l in the sample key k.
func label(k, l string) string {
	for _, m := range labelRE.FindAllStringSubmatch(k, -1) {
		if m[1] == l {
			return m[2]
		}
	}
	return ""
}

// parseMetrics reads the Prometheus text format into into, keeping the
// metrics named in keep.
func parseMetrics(r io.Reader, into samples, keep ...string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if !slices.Contains(keep, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return fmt.Errorf("metric line %q: %v", line, err)
		}
		into[line[:i]] += v
	}
	return sc.Err()
}

func (s samples) minus(o samples) samples {
	d := maps.Clone(s)
	for k, v := range o {
		d[k] -= v
	}
	return d
}

// byLabels sums the samples of metric name by the values of labels,
// joined with a space, e.g. "PATCH applications"; zero sums are left out.
func (s samples) byLabels(name string, keep func(key string) bool, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if !strings.HasPrefix(k, name+"{") || (keep != nil && !keep(k)) {
			continue
		}
		var parts []string
		for _, l := range labels {
			parts = append(parts, label(k, l))
		}
		out[strings.Join(parts, " ")] += v
	}
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
	return out
}

func isWrite(verb string) bool {
	switch strings.ToUpper(verb) {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE":
		return true
	}
	return false
}

func total(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// format prints m as "k=v k=v", sorted by key.
func format(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// scrapeController reads a controller's client request counters
// (controller-runtime's rest_client_requests_total{code,host,method}) and
// its work queues' depth (workqueue_depth{name}) from its metrics address.
func scrapeController(b *testing.B, addr string) samples {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	s := samples{}
	if err := parseMetrics(resp.Body, s, "rest_client_requests_total", "workqueue_depth"); err != nil {
		b.Fatal(err)
	}
	return s
}

// scrapeAPIServer reads the API server's request counters
// (apiserver_request_total{verb,resource,subresource,dry_run,...}).
func scrapeAPIServer(b *testing.B) samples {
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimSuffix(env.Config.Host, "/") + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	s := samples{}
	if err := parseMetrics(resp.Body, s, "apiserver_request_total"); err != nil {
		b.Fatal(err)
	}
	return s
}

// apiWrites are the API server's non-dry-run writes between two scrapes,
// by verb and resource[/subresource].
func apiWrites(before, after samples) map[string]float64 {
	w := map[string]float64{}
	for k, v := range after.minus(before) {
		if !strings.HasPrefix(k, "apiserver_request_total{") || v == 0 || label(k, "dry_run") != "" || !isWrite(label(k, "verb")) {
			continue
		}
		res := label(k, "resource")
		if sub := label(k, "subresource"); sub != "" {
			res += "/" + sub
		}
		if res != "leases" { // the API server's own heartbeats
			w[label(k, "verb")+" "+res] += v
		}
	}
	return w
}

// saveProfile fetches /debug/pprof/<what> from a controller's metrics
// address into path; a failure is logged, not fatal.
func saveProfile(b *testing.B, addr, what, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + what)
	if err != nil {
		b.Logf("profile %s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Logf("profile %s: %s", what, resp.Status)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		b.Logf("profile %s: %v", what, err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		b.Logf("profile %s: %v", what, err)
		return
	}
	b.Logf("profile %s: %s", what, path)
}

// tracker counts the objects of one kind in a namespace that satisfy done,
// from an informer (no polling List): all is closed once n of them do.
type tracker[T client.Object] struct {
	mu   sync.Mutex
	ok   map[string]bool
	done func(T) bool
	n    int
	all  chan struct{}
	// example is the name and state of one object not done, for a timeout.
	example string
}

func (w *tracker[T]) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ok)
}

func (w *tracker[T]) observe(obj any) {
	o, isT := obj.(T)
	if !isT {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done(o) {
		w.ok[o.GetName()] = true
	} else {
		delete(w.ok, o.GetName())
		w.example = o.GetName()
	}
	if len(w.ok) == w.n && w.all != nil {
		close(w.all)
		w.all = nil
	}
}

// track starts an informer on obj's kind in ns and returns the tracker and
// the channel closed when n objects satisfy done. The informer stops with
// the benchmark.
func track[T client.Object](b *testing.B, obj T, ns string, n int, done func(T) bool) (*tracker[T], <-chan struct{}) {
	all := make(chan struct{})
	w := &tracker[T]{ok: map[string]bool{}, done: done, n: n, all: all}
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, o any) { w.observe(o) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("informer cache not synced")
	}
	return w, all
}

// waitAll waits for all or fails b after timeout with the tracker's count.
func waitAll[T client.Object](b *testing.B, w *tracker[T], all <-chan struct{}, what string, timeout time.Duration) {
	select {
	case <-all:
	case <-time.After(timeout):
		w.mu.Lock()
		ex := w.example
		w.mu.Unlock()
		b.Fatalf("%d of %d %s after %s (e.g. %s is not)", w.count(), w.n, what, timeout, ex)
	}
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
