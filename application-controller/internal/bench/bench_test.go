package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// objects is the number of ConfigMaps per Application and per
	// Kustomization: kustomize-controller's BenchmarkScale mix.
	objects = 5
	// perAppTimeout bounds each phase at this much per Application (or
	// Kustomization), plus a minute: the benchmark fails rather than hangs.
	perAppTimeout = 2 * time.Second
	// trailing is how long requests are still counted after every
	// Application reported the no-change refresh handled.
	trailing = 5 * time.Second
	// resync is application-controller's --app-resync and the
	// Kustomizations' interval, in seconds: long enough that no periodic
	// reconcile falls inside a measured phase.
	resync = 3600
)

// sizes are the N of BenchmarkApplications: 100, and 1000 too when
// EDDY_BENCH_APPS_N lists it (e.g. EDDY_BENCH_APPS_N=100,1000), as 1000
// takes longer than `make bench` should on a small machine.
func sizes(b *testing.B) []int {
	v := os.Getenv("EDDY_BENCH_APPS_N")
	if v == "" {
		return []int{100}
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("EDDY_BENCH_APPS_N=%q: want a comma-separated list of positive integers", v)
		}
		out = append(out, n)
	}
	return out
}

// binaries are the built controllers, by name.
type binaries map[string]string

// BenchmarkApplications measures, against one local API server, with the
// built binaries running as processes and one Git repository holding
// apps/<i>/ with 5 ConfigMaps each (no namespace in the files):
//
//   - app-*: N Argo CD Applications (directory source on apps/<i>,
//     automated, CreateNamespace=true, all with one destination namespace,
//     as the Kustomizations below share one namespace) are created, then
//     application-controller starts; the clock runs until every
//     Application is Synced and Healthy at the commit. app-cpu-s and
//     app-peak-rss-MiB are application-controller's (/proc/<pid>/stat and
//     VmHWM), app-sc-cpu-s source-controller's over the same window (one
//     GitRepository serves every Application), app-req/app the
//     controller's client requests per Application; the printed table adds
//     source-controller's peak RSS, the RSS split into anonymous and file
//     pages, requests by method and code, and the API server's 404 and 409
//     answers by resource;
//   - refresh-*: a no-change refresh of the N (argocd.argoproj.io/refresh:
//     normal) until every Application has handled it (the annotation gone),
//     plus a trailing 5 s: application-controller's requests and writes per
//     Application from its rest_client_requests_total, the API server's
//     non-dry-run writes per Application (the benchmark's own N annotation
//     patches taken out), and the CPU;
//   - ks-*: then, application-controller stopped, N Kustomizations of the
//     same paths of the same repository (targetNamespace, no prune) and
//     their GitRepository are created, then kustomize-controller starts;
//     the clock runs until all are Ready. Same CPU and RSS figures;
//   - ratio-*: the Application figure over the Kustomization one.
//
// Both controllers run with their own defaults (application-controller
// --concurrent 10, kustomize-controller 4; both QPS 50, burst 300), as users
// run them. With EDDY_BENCH_PROFILE_DIR set, a CPU profile of
// application-controller over the first EDDY_BENCH_PROFILE_SECONDS (default
// 30) of the rollout, one over the refresh and a heap profile at all Synced
// are written there. Run it with -benchtime 1x.
func BenchmarkApplications(b *testing.B) {
	dir := b.TempDir()
	bins := binaries{}
	for _, name := range []string{"source-controller", "application-controller", "kustomize-controller"} {
		exe, err := testenv.BuildController(name, dir)
		if err != nil {
			b.Fatal(err)
		}
		bins[name] = exe
	}
	for _, n := range sizes(b) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for range b.N {
				benchApplications(b, n, bins)
			}
		})
	}
}

// phase is one measured rollout: its time and the usage of the
// controller and of source-controller over it.
type phase struct {
	time   time.Duration
	ctrl   usage
	source usage
	// requests are the controller's client requests from its start to the
	// end of the phase, by method and code.
	requests map[string]float64
	// refused are the API server's 404 and 409 answers over the phase, by
	// code, verb and resource: reads of objects that do not exist (yet),
	// creates of objects that do.
	refused map[string]float64
	// fetches are the Git server's clones and fetches of the repository
	// over the phase (Applications only).
	fetches int
	// anonMiB and fileMiB split the controller's RSS at the phase's end
	// into anonymous memory (heap, stacks) and file pages (the binary).
	anonMiB, fileMiB float64
}

// refresh is the no-change refresh's figures.
type refresh struct {
	time       time.Duration
	cpu        time.Duration
	client     map[string]float64 // the controller's requests by method and code
	apiWrites  map[string]float64 // the API server's non-dry-run writes by verb and resource
	ownPatches float64            // the benchmark's annotation patches, among apiWrites
	// heal are the self-heal times after it, in edit order (see selfHeal).
	heal []time.Duration
	// drained is how long after the refresh's end the controller's work
	// queue took to empty.
	drained time.Duration
}

func benchApplications(b *testing.B, n int, bins binaries) {
	b.Logf("load average at start: %s", loadavg())
	files := make(map[string]string, n*objects)
	for i := range n {
		for j := range objects {
			name := fmt.Sprintf("a%d-%d", i, j)
			files[fmt.Sprintf("apps/%d/%s.yaml", i, name)] = fmt.Sprintf(
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  key: value-%s\n", name, name)
		}
	}
	repo := gitSrv.NewRepo(b, files)
	sha := repo.MustGit(b, "rev-parse", "HEAD")
	work := b.TempDir()
	sc := start(b, bins["source-controller"], filepath.Join(work, "source-controller.log"), storageArgs(b, work)...)
	defer sc.Stop()

	b.ResetTimer()
	app, ref := runApplications(b, n, repo, sha, bins["application-controller"], sc, work)
	ks := runKustomizations(b, n, repo.URL(), bins["kustomize-controller"], sc, work)
	b.StopTimer()
	b.Logf("load average at end: %s", loadavg())
	report(b, n, app, ks, ref)
}

// storageArgs are source-controller's storage flags, in work.
func storageArgs(b *testing.B, work string) []string {
	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	return []string{"--storage-path=" + filepath.Join(work, "storage"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port)}
}

// start runs a built controller; on failure of the benchmark its log's
// tail is printed.
func start(b *testing.B, exe, logPath string, args ...string) *testenv.Process {
	p, err := testenv.StartController(env, exe, logPath, args...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("%s (tail):\n%s", filepath.Base(logPath), tail(logPath, 40))
		}
	})
	return p
}

// metricsAddr is a free loopback address for a controller's --metrics-addr.
func metricsAddr(b *testing.B) string {
	port, err := testenv.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// fastClient is a client for the benchmark's own set-up, with limits that
// do not slow it down.
func fastClient(b *testing.B) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// parallel runs f(0..n-1) on workers goroutines and fails b with the
// first error.
func parallel(b *testing.B, n, workers int, f func(i int) error) {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	work := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

func phaseTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*perAppTimeout }

// runKustomizations creates a GitRepository of url and n Kustomizations
// of apps/<i> into a new namespace, starts kustomize-controller, waits
// until all are Ready and stops it.
func runKustomizations(b *testing.B, n int, url, exe string, sc *testenv.Process, work string) phase {
	ctx := context.Background()
	fast := fastClient(b)
	ns := testenv.NewNamespace(b, env.Client, "bench-ks-")
	hour := metav1.Duration{Duration: resync * time.Second}
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "src", Namespace: ns},
		Spec:       sourcev1.GitRepositorySpec{URL: url, Interval: hour, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := fast.Create(ctx, src); err != nil {
		b.Fatal(err)
	}
	parallel(b, n, 8, func(i int) error {
		return fast.Create(ctx, &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k%d", i), Namespace: ns},
			Spec: kustomizev1.KustomizationSpec{
				Interval: hour, Path: fmt.Sprintf("apps/%d", i), TargetNamespace: ns,
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: src.Name},
			},
		})
	})
	w, all := track(b, &kustomizev1.Kustomization{}, ns, n, func(k *kustomizev1.Kustomization) bool {
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == k.Generation
	})
	var kc *testenv.Process
	addr := metricsAddr(b)
	p := measureFromStart(b, sc, func() *testenv.Process {
		kc = start(b, exe, filepath.Join(work, "kustomize-controller.log"), "--metrics-addr="+addr)
		return kc
	}, func() { waitAll(b, w, all, "Kustomizations Ready", phaseTimeout(n)) })
	p.requests = scrapeController(b, addr).byLabels("rest_client_requests_total", nil, "method", "code")
	kc.Stop()
	return p
}

// measureFromStart is measure with the clock started before the
// controller: its start-up (caches, discovery) is part of the rollout.
func measureFromStart(b *testing.B, sc *testenv.Process, startCtrl func() *testenv.Process, wait func()) phase {
	resetPeakRSS(sc.PID())
	s0, api0 := procUsage(b, sc.PID()), scrapeAPIServer(b)
	t0 := time.Now()
	ctrl := startCtrl()
	wait()
	p := phase{time: time.Since(t0)}
	p.refused = scrapeAPIServer(b).minus(api0).byLabels("apiserver_request_total",
		func(k string) bool { c := label(k, "code"); return c == "404" || c == "409" }, "code", "verb", "resource")
	c1, s1 := procUsage(b, ctrl.PID()), procUsage(b, sc.PID())
	p.ctrl = c1 // from the process's start
	pid := strconv.Itoa(ctrl.PID())
	p.anonMiB, p.fileMiB = testenv.ProcStatusMiB(b, pid, "RssAnon"), testenv.ProcStatusMiB(b, pid, "RssFile")
	p.source = usage{cpu: s1.cpu - s0.cpu, peakRSSMiB: s1.peakRSSMiB}
	return p
}

// patchAll merge-patches each Application app-<i> in argocd with patch.
func patchAll(b *testing.B, c client.Client, n int, patch []byte) {
	parallel(b, n, 8, func(i int) error {
		app := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Name: appName(n, i), Namespace: argocd}}
		return c.Patch(context.Background(), app, client.RawPatch(types.MergePatchType, patch))
	})
}

// appName is the name of Application i of a run with n: distinct across
// the sizes of one benchmark run.
func appName(n, i int) string { return fmt.Sprintf("bench%d-%d", n, i) }
