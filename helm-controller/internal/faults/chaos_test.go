package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scale is the size of one run of the suite.
type scale struct {
	name                      string
	kustomizations, objects   int
	helmReleases              int
	kills                     int
	apiRestarts, etcdRestarts int
	gitHangs                  int
	replicas                  int           // kustomize-controller replicas (leader election when 2)
	interval                  time.Duration // of the Kustomizations and HelmReleases
	gap                       time.Duration // mean time between two kills
}

var (
	shortScale = scale{name: "short", kustomizations: 4, objects: 8, helmReleases: 1, kills: 20, apiRestarts: 1, etcdRestarts: 1,
		gitHangs: 1, replicas: 1, interval: 30 * time.Second, gap: 2 * time.Second}
	fullScale = scale{name: "full", kustomizations: 20, objects: 50, helmReleases: 5, kills: 100, apiRestarts: 3, etcdRestarts: 3,
		gitHangs: 3, replicas: 2, interval: time.Minute, gap: 3 * time.Second}
)

// TestCrashConsistency is the fault-injection suite: while commits add and
// remove objects of the Kustomizations and HelmReleases are upgraded, it
// SIGKILLs source-, kustomize- and helm-controller at random (a restart
// sometimes arms a fault point, so the next process also dies at a chosen
// step), restarts kube-apiserver and etcd in place, and makes the Git
// server hang mid-pack. Then, within two intervals, it checks convergence
// (see verify) and prints the figures. EDDY_FAULTS=full runs the full
// form (`make faults`); EDDY_FAULTS_SEED replays a schedule.
func TestCrashConsistency(t *testing.T) {
	s := shortScale
	if os.Getenv("EDDY_FAULTS") == "full" {
		s = fullScale
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EDDY_FAULTS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("EDDY_FAULTS_SEED=%q: %v", v, err)
		}
	}
	fmt.Printf("faults: %s form, seed %d (EDDY_FAULTS_SEED=%d replays it)\n", s.name, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r := newRun(t, s, rng)
	r.setUp(t)
	begin := time.Now()
	r.inject(t)
	r.figures.faultPhase = time.Since(begin)
	r.verify(t)
	r.print()
}

// run is one run of the suite: its workload, controllers and figures.
type run struct {
	s        scale
	rng      *rand.Rand
	ns       string
	work     *workload
	proxy    *hangProxy
	sink     *eventSink
	src      *controller
	kcs      []*controller
	hc       *controller
	tmpDirs  map[*controller]string
	hrValues map[string]string // HelmRelease → its last greeting
	figures  figures
}

func newRun(t *testing.T, s scale, rng *rand.Rand) *run {
	return &run{s: s, rng: rng, ns: newNamespace(t), tmpDirs: map[*controller]string{}, hrValues: map[string]string{}}
}

// setUp starts the event sink, the hanging proxy, the controllers, and
// creates the objects; it waits until every Kustomization and HelmRelease
// is Ready once.
func (r *run) setUp(t *testing.T) {
	var err error
	if r.sink, err = startEventSink(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.sink.Close)
	if r.proxy, err = startHangProxy(gitSrv.URL, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.proxy.Close)
	r.work = newWorkload(t, r.rng, r.s.kustomizations, r.s.objects)

	// The run has a source-controller of its own (with its events, its
	// TMPDIR); the package's is stopped meanwhile.
	sourceCtl.stop()
	t.Cleanup(func() {
		if err := sourceCtl.start(true); err != nil {
			t.Error(err)
		}
	})
	retry := []string{"--min-retry-delay=200ms", "--max-retry-delay=2s", "--events-addr=" + r.sink.URL}
	storage, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r.src, err = newController(env, dir, "source-controller", append([]string{"--storage-path=" + filepath.Join(dir, "storage"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage),
		"--concurrent=4"}, retry...)...)
	if err != nil {
		t.Fatal(err)
	}
	// One namespace for the controllers, as installed: source-controller's
	// artifact key is read from it by the consumers.
	runtimeNS := []string{"RUNTIME_NAMESPACE=" + r.ns}
	r.src.baseEnv = runtimeNS
	r.isolate(t, r.src)
	r.start(t, r.src)
	for i := range r.s.replicas {
		args := append([]string{"--concurrent=4", "--requeue-dependency=1s"}, retry...)
		if r.s.replicas > 1 {
			args = append(args, "--enable-leader-election", "--leader-election-lease-duration=6s",
				"--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s")
		}
		kc, err := newController(env, t.TempDir(), "kustomize-controller", args...)
		if err != nil {
			t.Fatal(err)
		}
		kc.label = fmt.Sprintf("kustomize-controller-%d", i)
		kc.baseEnv = runtimeNS
		r.isolate(t, kc)
		r.start(t, kc)
		r.kcs = append(r.kcs, kc)
	}
	if r.hc, err = newController(env, t.TempDir(), "helm-controller", retry...); err != nil {
		t.Fatal(err)
	}
	r.hc.baseEnv = runtimeNS
	r.isolate(t, r.hc)
	r.start(t, r.hc)
	r.createObjects(t)
	t.Cleanup(func() { r.deleteObjects(t) }) // before the controllers stop
	r.waitConverged(t, 3*time.Minute, false)
}

// deleteObjects deletes the run's Kustomizations and HelmReleases and
// waits (up to a minute) until their finalizers ran, so that the next
// tests' controllers do not find them.
func (r *run) deleteObjects(t *testing.T) {
	ctx := context.Background()
	for _, obj := range []client.Object{&kustomizev1.Kustomization{}, &helmv2.HelmRelease{}} {
		if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(r.ns)); err != nil {
			t.Errorf("deleting the run's objects: %v", err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var ks kustomizev1.KustomizationList
		var hrs helmv2.HelmReleaseList
		_ = env.Client.List(ctx, &ks, client.InNamespace(r.ns))
		_ = env.Client.List(ctx, &hrs, client.InNamespace(r.ns))
		if len(ks.Items) == 0 && len(hrs.Items) == 0 {
			return
		}
		r.pause(time.Second)
	}
	t.Errorf("the run's Kustomizations and HelmReleases not gone a minute after their deletion")
}

// isolate gives c a TMPDIR of its own (to find leaked work directories),
// prints its log when t fails and stops it after t.
func (r *run) isolate(t *testing.T, c *controller) {
	dir := filepath.Join(t.TempDir(), "tmp-"+c.label)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.tmpDirs[c] = dir
	c.baseEnv = append(c.baseEnv, "TMPDIR="+dir)
	c.logOnFailure(t)
	t.Cleanup(c.stop)
}

func (r *run) start(t *testing.T, c *controller) {
	if err := c.start(r.s.replicas == 1 || c.name != "kustomize-controller"); err != nil {
		t.Fatal(err)
	}
}

// createObjects creates the GitRepository (through the hanging proxy), the
// Kustomizations (and the broken one), the HelmRepository and HelmReleases.
func (r *run) createObjects(t *testing.T) {
	src := newSource(t, r.ns, "repo", r.proxy.URL+"/"+r.work.repo.Name, 3*time.Second)
	_ = src
	for i := range r.s.kustomizations {
		newKustomization(t, r.ns, fmt.Sprintf("k%d", i), "repo", fmt.Sprintf("./k%d", i), r.s.interval)
	}
	newKustomization(t, r.ns, "broken", "repo", "./broken", r.s.interval)
	charts := helmtest.NewChartServer(t)
	charts.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "app", "0.1.0")))
	create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: r.ns},
		Spec: sourcev1.HelmRepositorySpec{URL: charts.URL(), Interval: metav1.Duration{Duration: time.Hour}}})
	for i := range r.s.helmReleases {
		hr := newHelmRelease(r.ns, fmt.Sprintf("h%d", i), "charts")
		hr.Spec.Interval.Duration = r.s.interval
		hr.Spec.Install = &helmv2.Install{Remediation: &helmv2.InstallRemediation{Retries: -1}}
		hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: -1}}
		create(t, hr)
		r.hrValues[hr.Name] = "hello"
	}
}

// kustomizations lists the run's Kustomizations but the broken one.
func (r *run) kustomizations(t testing.TB) []kustomizev1.Kustomization {
	t.Helper()
	var list kustomizev1.KustomizationList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []kustomizev1.Kustomization
	for _, k := range list.Items {
		if k.Namespace == r.ns && k.Name != "broken" {
			out = append(out, k)
		}
	}
	return out
}
