package controller

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	apf "sigs.k8s.io/cli-utils/pkg/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scaleLimits are the controller's client limits of a BenchmarkScale run,
// given to the built binary as --kube-api-qps and --kube-api-burst and to
// the baseline's clients.
type scaleLimits struct {
	name  string
	qps   float32
	burst int
}

var (
	apfOnce sync.Once
	apfOn   bool
)

// effective returns the limits a client of the built binary really has on
// env's API server: none (QPS -1) when it has API Priority and Fairness on,
// as the binary then ignores --kube-api-qps and --kube-api-burst (as Flux's
// controllers do); the baseline loop gets the same.
func (l scaleLimits) effective() scaleLimits {
	apfOnce.Do(func() {
		apfOn, _ = apf.IsEnabled(context.Background(), env.Config)
	})
	if apfOn {
		return scaleLimits{l.name, -1, -1}
	}
	return l
}

var (
	defaultLimits = scaleLimits{"default", 50, 300} // Flux's defaults
	// raisedLimits are high enough that the API server, not the client's
	// rate limiter, is the bound.
	raisedLimits = scaleLimits{"raised", 5000, 10000}
)

const (
	// scaleConcurrent is --concurrent of each shard: Flux's default for
	// kustomize-controller. The baseline runs as many workers per shard.
	scaleConcurrent = 4
	// steadyInterval and steadyWindow: the steady-state run reconciles
	// unchanged Kustomizations at this interval and measures over the window
	// (2.5 intervals).
	steadyInterval = time.Minute
	steadyWindow   = 150 * time.Second
)

var (
	scaleExeOnce sync.Once
	scaleExe     string
	scaleExeErr  error
)

// BenchmarkScale measures the built kustomize-controller binary, so that
// its CPU and RSS are its own: N Kustomizations, each applying 5 ConfigMaps
// from one GitRepository, spread round-robin over 1 or 2 shards (one
// process each, --watch-label-selector on sharding.fluxcd.io/key), at
// Flux's default client limits and with them raised. The Kustomizations are
// created first; the clock runs from the start of the processes until all
// are Ready. Reported: that time; a plain server-side-apply loop of the same
// objects in the same run, with the same client limits and 4 workers per
// shard, and the ratio; the processes' CPU seconds (summed) and peak RSS
// (max and sum); requests and writes per reconcile from the controllers'
// metrics (client side: dry-run applies count as writes there) and the
// API server's non-dry-run writes per reconcile.
//
// steady/n=1000 lets 1000 unchanged Kustomizations reconcile at interval
// 1m (one shard, raised limits: at QPS 50 a no-op reconcile's requests
// could not keep that pace) and measures a window of 2.5 intervals after
// all are Ready: CPU per
// no-op reconcile, the CPU-seconds per hour it extrapolates to for 1000
// Kustomizations at interval 10m, and writes per unchanged reconcile.
//
// On an API server with API Priority and Fairness on (the local cluster's,
// as every Kubernetes' since 1.20) the binary, as Flux's controllers, has no
// client-side rate limiter whatever the flags, and the baseline loop gets
// none either: both limits then measure the same client.
//
// With EDDY_BENCH_PROFILE_DIR set, each run writes a CPU profile of the
// controller (shard 0) taken during the rollout (the first
// EDDY_BENCH_PROFILE_SECONDS, default 30; in steady state: the window) and
// a heap profile at all Ready, from /debug/pprof/ on its metrics address.
func BenchmarkScale(b *testing.B) {
	scaleExeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eddy-kc-scale-")
		if err != nil {
			scaleExeErr = err
			return
		}
		scaleExe, scaleExeErr = testenv.BuildController("kustomize-controller", dir)
	})
	if scaleExeErr != nil {
		b.Fatal(scaleExeErr)
	}
	for _, c := range scaleCases(b) {
		b.Run(c.name(), func(b *testing.B) {
			for range b.N {
				scaleRun(b, c, 0)
			}
		})
	}
	b.Run("steady/n=1000", func(b *testing.B) {
		for range b.N {
			scaleRun(b, scaleCase{1000, 1, raisedLimits, configMapsMix}, steadyInterval)
		}
	})
}

// shardProc is one running shard of a BenchmarkScale run.
type shardProc struct {
	p       *testenv.Process
	metrics string // host:port of --metrics-addr
}

// scaleRun is one run of BenchmarkScale; steady > 0 makes it the
// steady-state run at that interval.
func scaleRun(b *testing.B, c scaleCase, steady time.Duration) {
	n, shards, lim := c.n, c.shards, c.lim
	ctx := context.Background()
	fast := fastClient(b)
	ns := testenv.NewNamespace(b, env.Client, "scale-")
	r := newRepo(b, mixFiles(b, c.mix, ns, n))
	src := newSource(b, ns, "src", r)
	interval := time.Hour
	if steady > 0 {
		interval = steady
	}
	parallel(b, n, 8, func(i int) error {
		k := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k%d", i), Namespace: ns,
				Labels: map[string]string{shardKey: fmt.Sprintf("bench%d", i%shards)}},
			Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: interval},
				// No prune: deleting the namespace afterwards only
				// removes finalizers, it deletes nothing object by object.
				Prune:     false,
				Path:      fmt.Sprintf("k%d", i),
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: src.Name},
			},
		}
		return fast.Create(ctx, k)
	})
	ready := watchReady(b, ns, n)
	work := b.TempDir()
	profDir := os.Getenv("EDDY_BENCH_PROFILE_DIR")
	profName := strings.NewReplacer("/", "_", "=", "").Replace(b.Name())
	api0 := scrapeAPIServer(b)

	b.ResetTimer()
	start := time.Now()
	procs := make([]shardProc, shards)
	parallel(b, shards, shards, func(s int) error {
		port, err := testenv.FreePort()
		if err != nil {
			return err
		}
		procs[s].metrics = fmt.Sprintf("127.0.0.1:%d", port)
		procs[s].p, err = testenv.StartController(env, scaleExe, filepath.Join(work, fmt.Sprintf("shard%d.log", s)),
			fmt.Sprintf("--watch-label-selector=%s in (bench%d)", shardKey, s),
			"--metrics-addr="+procs[s].metrics, fmt.Sprintf("--concurrent=%d", scaleConcurrent),
			fmt.Sprintf("--kube-api-qps=%g", lim.qps), fmt.Sprintf("--kube-api-burst=%d", lim.burst))
		return err
	})
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, p := range procs {
			if p.p != nil {
				p.p.Stop()
			}
		}
	}
	defer stop()
	for _, p := range procs {
		if p.p == nil {
			b.FailNow() // parallel reported why
		}
	}
	cpuProf := make(chan struct{})
	if profDir != "" && steady == 0 {
		go func() {
			defer close(cpuProf)
			secs := 30
			if v, err := strconv.Atoi(os.Getenv("EDDY_BENCH_PROFILE_SECONDS")); err == nil && v > 0 {
				secs = v
			}
			saveProfile(b, procs[0].metrics, fmt.Sprintf("profile?seconds=%d", secs), filepath.Join(profDir, profName+".cpu.pprof"))
		}()
	} else {
		close(cpuProf)
	}

	timeout := time.Duration(n) * 720 * time.Millisecond
	select {
	case <-ready.all:
	case <-time.After(timeout):
		b.Fatalf("%d of %d Kustomizations Ready after %s", ready.count(), n, timeout)
	}
	elapsed := time.Since(start)
	cpu, rssMax, rssSum := procUsage(b, procs)
	m1 := scrapeControllers(b, procs)
	api1 := scrapeAPIServer(b)
	if profDir != "" {
		saveProfile(b, procs[0].metrics, "heap", filepath.Join(profDir, profName+".heap.pprof"))
	}

	if steady == 0 {
		b.StopTimer()
		<-cpuProf
		baseline := ssaLoop(b, c, false)
		reportRequests(b, m1, apiWrites(api0, api1), "")
		reportKinds(b, kindRequests(api0, api1), c)
		b.ReportMetric(elapsed.Seconds(), "ready-s")
		b.ReportMetric(baseline.Seconds(), "baseline-ssa-loop-s")
		b.ReportMetric(elapsed.Seconds()/baseline.Seconds(), "ratio-ready/baseline")
		if c.mix.name != configMapsMix.name {
			// Of one kind, the loop is the same with one rate limiter.
			b.ReportMetric(ssaLoop(b, c, true).Seconds(), "baseline-one-limiter-s")
		}
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		b.ReportMetric(rssMax, "peak-rss-max-MiB")
		b.ReportMetric(rssSum, "peak-rss-sum-MiB")
	} else {
		// The window: nothing changes, every reconcile is a no-op one.
		var cpuProfDone chan struct{}
		if profDir != "" {
			cpuProfDone = make(chan struct{})
			go func() {
				defer close(cpuProfDone)
				saveProfile(b, procs[0].metrics, fmt.Sprintf("profile?seconds=%d", int(steadyWindow.Seconds())-5),
					filepath.Join(profDir, profName+".cpu.pprof"))
			}()
		}
		time.Sleep(steadyWindow)
		cpu2, rss2, _ := procUsage(b, procs)
		m2 := scrapeControllers(b, procs)
		api2 := scrapeAPIServer(b)
		b.StopTimer()
		if cpuProfDone != nil {
			<-cpuProfDone
		}
		recs := m2.reconciles() - m1.reconciles()
		if recs == 0 {
			b.Fatalf("no reconcile in %s at interval %s", steadyWindow, steady)
		}
		delta := m2.minus(m1)
		reportRequests(b, delta, apiWrites(api1, api2), "steady ")
		perRec := (cpu2 - cpu).Seconds() / recs
		b.Logf("steady window %s: %.0f reconciles, %.2f CPU-s", steadyWindow, recs, (cpu2 - cpu).Seconds())
		b.ReportMetric(elapsed.Seconds(), "ready-s")
		b.ReportMetric(recs, "reconciles")
		b.ReportMetric(perRec*1000, "cpu-ms/noop-reconcile")
		b.ReportMetric(perRec*1000*float64(time.Hour/(10*time.Minute)), "cpu-s/h-1000-at-10m")
		b.ReportMetric(rss2, "peak-rss-max-MiB")
	}

	// Clean up while the controllers still run: they remove their
	// finalizers, then the namespace goes; the next run starts quiet.
	deleteNamespaceAndWait(b, ns)
	stop()
	deleteMixNamespaces(b, fast, ns)
	if b.Failed() {
		for s, p := range procs {
			log, _ := os.ReadFile(p.p.LogPath)
			if len(log) > 20000 {
				log = log[len(log)-20000:]
			}
			b.Logf("shard %d log (tail):\n%s", s, log)
		}
	}
}

// fastClient is a client for the benchmark's own set-up and clean-up,
// with limits that do not slow them down.
func fastClient(b *testing.B) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// parallel runs f(0..n-1) on workers goroutines; it fails b with the
// first error.
func parallel(b *testing.B, n, workers int, f func(i int) error) {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	work := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		b.Error(first)
	}
}

// readyWatch counts the Kustomizations of a namespace that are Ready at
// their generation, from an informer (no polling List).
type readyWatch struct {
	mu    sync.Mutex
	ready map[string]bool
	n     int
	all   chan struct{}
	done  bool
}

func (w *readyWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ready)
}

func (w *readyWatch) observe(obj any) {
	k, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return
	}
	c := readyCond(k)
	w.mu.Lock()
	defer w.mu.Unlock()
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == k.Generation {
		w.ready[k.Name] = true
	} else {
		delete(w.ready, k.Name)
	}
	if !w.done && len(w.ready) == w.n {
		w.done = true
		close(w.all)
	}
}

func watchReady(b *testing.B, ns string, n int) *readyWatch {
	w := &readyWatch{ready: map[string]bool{}, n: n, all: make(chan struct{})}
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Client.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	inf, err := c.GetInformer(ctx, &kustomizev1.Kustomization{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("Kustomization cache not synced")
	}
	return w
}

// procUsage reads each process's CPU (utime+stime, summed) and peak RSS
// (VmHWM: the max and the sum) from /proc while it runs.
func procUsage(b *testing.B, procs []shardProc) (cpu time.Duration, rssMaxMiB, rssSumMiB float64) {
	for _, p := range procs {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.p.PID()))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command's ")": state is field 3, utime 14, stime 15.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		cpu += time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
		hwm := testenv.ProcStatusMiB(b, strconv.Itoa(p.p.PID()), "VmHWM")
		rssSumMiB += hwm
		rssMaxMiB = max(rssMaxMiB, hwm)
	}
	return cpu, rssMaxMiB, rssSumMiB
}

// samples are Prometheus samples: metric name and sorted labels → value.
type samples map[string]float64

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// parseMetrics reads the Prometheus text format, keeping the metrics in keep.
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

// label returns the value of label l in the sample key k.
func label(k, l string) string {
	for _, m := range labelRE.FindAllStringSubmatch(k, -1) {
		if m[1] == l {
			return m[2]
		}
	}
	return ""
}

func (s samples) sum(name string, match func(key string) bool) float64 {
	var t float64
	for k, v := range s {
		if strings.HasPrefix(k, name+"{") && (match == nil || match(k)) {
			t += v
		}
	}
	return t
}

func (s samples) reconciles() float64 {
	return s.sum("controller_runtime_reconcile_total", func(k string) bool { return label(k, "controller") == "kustomization" })
}

func (s samples) minus(o samples) samples {
	d := maps.Clone(s)
	for k, v := range o {
		d[k] -= v
	}
	return d
}

func isWrite(verb string) bool {
	switch strings.ToUpper(verb) {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE":
		return true
	}
	return false
}

// scrapeControllers sums the controllers' request and reconcile counters.
func scrapeControllers(b *testing.B, procs []shardProc) samples {
	s := samples{}
	for _, p := range procs {
		resp, err := http.Get("http://" + p.metrics + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		err = parseMetrics(resp.Body, s, "rest_client_requests_total", "controller_runtime_reconcile_total")
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// scrapeAPIServer reads the API server's request counters.
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

// apiWrites are the API server's non-dry-run writes between two scrapes
// to the resources a Kustomization reconcile writes, by verb and resource.
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
		switch verb := label(k, "verb"); label(k, "resource") {
		case "kustomizations", "events":
			w[verb+" "+res] += v
		case "configmaps", "namespaces", "secrets", "services", "deployments":
			// kube-controller-manager's POSTs and PUTs aside (see kindRequests).
			if verb == "APPLY" || verb == "PATCH" {
				w[verb+" "+res] += v
			}
		}
	}
	return w
}

// reportRequests reports requests and writes per reconcile: the
// controllers' client side (every request, dry-runs included) and the
// API server's non-dry-run writes.
func reportRequests(b *testing.B, m samples, api map[string]float64, prefix string) {
	recs := m.reconciles()
	if recs == 0 {
		return
	}
	reqs := m.sum("rest_client_requests_total", nil)
	writes := m.sum("rest_client_requests_total", func(k string) bool { return isWrite(label(k, "method")) })
	var apiTotal float64
	var detail []string
	for _, k := range slices.Sorted(maps.Keys(api)) {
		apiTotal += api[k]
		detail = append(detail, fmt.Sprintf("%s=%.0f", k, api[k]))
	}
	byMethod := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "rest_client_requests_total{") {
			byMethod[label(k, "method")] += v
		}
	}
	var methods []string
	for _, k := range slices.Sorted(maps.Keys(byMethod)) {
		methods = append(methods, fmt.Sprintf("%s=%.0f", k, byMethod[k]))
	}
	b.Logf("%sreconciles %.0f; controller requests %s; API server writes (not dry-run) %s", prefix, recs,
		strings.Join(methods, " "), strings.Join(detail, " "))
	b.ReportMetric(recs, "reconciles")
	b.ReportMetric(reqs/recs, "req/reconcile")
	b.ReportMetric(writes/recs, "client-writes/reconcile")
	b.ReportMetric(apiTotal/recs, "apiserver-writes/reconcile")
}

// saveProfile fetches /debug/pprof/<what> from the metrics address into
// path; a missing endpoint is logged, not fatal.
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

// ssaLoop is the baseline: the objects of the run's n Kustomizations
// applied by plain server-side apply, with one controller-runtime client
// per shard at the controller's limits and scaleConcurrent workers each,
// in a namespace of its own, deleted after. Such a client, as the
// controller's, has a rate limiter per kind; oneLimiter gives each shard's
// client a single one for all kinds (as client-go's typed clientset and
// dynamic client have).
func ssaLoop(b *testing.B, c scaleCase, oneLimiter bool) time.Duration {
	ctx := context.Background()
	ns := testenv.NewNamespace(b, env.Client, "scale-base-")
	clients := make([]client.Client, c.shards)
	for s := range clients {
		cfg := rest.CopyConfig(env.Config)
		lim := c.lim.effective()
		cfg.QPS, cfg.Burst = lim.qps, lim.burst
		if oneLimiter && lim.qps > 0 {
			cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(lim.qps, lim.burst)
		}
		cl, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		clients[s] = cl
	}
	b.StartTimer()
	start := time.Now()
	parallel(b, c.n, c.shards*scaleConcurrent, func(i int) error {
		cl := clients[i%c.shards]
		for _, u := range c.mix.objects(ns, i) {
			if err := cl.Patch(ctx, u, client.Apply, client.FieldOwner("baseline"), client.ForceOwnership); err != nil {
				return err
			}
		}
		return nil
	})
	d := time.Since(start)
	b.StopTimer()
	deleteNamespaceAndWait(b, ns)
	deleteMixNamespaces(b, fastClient(b), ns)
	return d
}

// deleteNamespaceAndWait deletes ns and waits until it is gone.
func deleteNamespaceAndWait(b *testing.B, ns string) {
	ctx := context.Background()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("namespace %s still there after 20 minutes (err %v, status %+v)", ns, err, obj.Status)
		}
		time.Sleep(time.Second)
	}
}
