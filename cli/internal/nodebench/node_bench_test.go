// Package nodebench measures Eddy on a real node: the node profile of
// pkg/localcluster (a real kubelet and containerd on this machine), Eddy
// installed with the built bin/eddy from the images of make test-images
// (or make images) and make node-images, served by a local registry.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 30m ./cli/internal/nodebench/
//
// It is a benchmark, not a test: nothing here asserts a duration. It needs
// root and the node profile's packages (localcluster.CheckNodeProfile) and
// skips with one line otherwise; it holds localcluster.AcquireNodeLock
// while its node runs, so it waits for the node tests of other packages.
package nodebench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// controllers are the controllers `eddy install` runs by default.
var controllers = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}

// short names the controllers in metric names.
var short = map[string]string{"source-controller": "sc", "kustomize-controller": "kc", "helm-controller": "hc", "notification-controller": "nc"}

const (
	// kustomizations is the number of Kustomizations of the loaded
	// measurement, each applying configMapsPerKs ConfigMaps.
	kustomizations  = 100
	configMapsPerKs = 3
	// defaultReps is the number of commit → Ready repetitions in each mode
	// (EDDY_BENCH_NODE_REPS overrides it).
	defaultReps = 9
)

// BenchmarkNode measures, on one node-profile cluster:
//
//   - install-s: from starting `eddy install --registry …` until the four
//     controllers' pods are Ready;
//   - <c>-idle-MiB, <c>-loaded-MiB: each controller pod's memory peak
//     (cgroup v1 memory.max_usage_in_bytes of the pod's cgroup) once the
//     pods are Ready and hold their leader-election leases, and again once
//     one GitRepository and 100 Kustomizations of 3 ConfigMaps each (plus
//     the application's) are Ready; ks-ready-s is the time from creating
//     them to all Ready;
//   - commit-pods-*-s, commit-local-*-s: commit → Ready, from a `git push`
//     of a commit changing an env var of a Deployment (tinyapp, readiness
//     probe every second) to its new pod Running and Ready, the push
//     followed at once by the reconcile.fluxcd.io/requestedAt annotation
//     on the application's GitRepository (what `eddy reconcile source git`
//     sets; every GitRepository and Kustomization has a 10m interval).
//     First with Eddy as pods, then with the four Deployments scaled to 0
//     and the same built controllers run by the benchmark as processes on
//     the host with the cluster's kubeconfig (flags as `eddy dev` gives
//     them); ratio-commit-pods/local-{min,median} compares the two.
func BenchmarkNode(b *testing.B) {
	if err := localcluster.CheckNodeProfile(""); errors.Is(err, localcluster.ErrNodeUnsupported) {
		b.Skip(err)
	} else if err != nil {
		b.Fatal(err) // e.g. make tools not run
	}
	in := findInputs(b)
	ctrllog.SetLogger(logr.Discard())
	// One run whatever b.N (-benchtime 1x): a run is minutes long and
	// holds the machine's one node; its repetitions are the commits.
	report(b, runNode(b, in))
}

// inputs are the built binaries and image layouts the benchmark runs.
type inputs struct {
	bin, eddy, version string
	images, nodeImages string
	reps               int
}

// findInputs finds bin/ (EDDY_BUILT_BIN_DIR or the workspace's) and the
// image layouts of bin/eddy's version; it skips with one line saying what
// to build when something is missing.
func findInputs(b *testing.B) inputs {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		b.Fatal(err)
	}
	in := inputs{bin: filepath.Join(root, "bin"), reps: defaultReps}
	if d := os.Getenv("EDDY_BUILT_BIN_DIR"); d != "" {
		in.bin = d
	}
	if s := os.Getenv("EDDY_BENCH_NODE_REPS"); s != "" {
		if in.reps, err = strconv.Atoi(s); err != nil || in.reps < 1 {
			b.Fatalf("EDDY_BENCH_NODE_REPS=%q: want a number above 0", s)
		}
	}
	in.eddy = filepath.Join(in.bin, "eddy")
	for _, name := range append([]string{"eddy"}, controllers...) {
		if _, err := os.Stat(filepath.Join(in.bin, name)); err != nil {
			b.Skipf("no %s in %s: run make build", name, in.bin)
		}
	}
	out, err := exec.Command(in.eddy, "version", "--client", "-o", "json").Output()
	var v struct{ Eddy string }
	if err != nil || json.Unmarshal(out, &v) != nil || v.Eddy == "" {
		b.Fatalf("eddy version --client -o json: %v: %q", err, out)
	}
	in.version = v.Eddy
	in.nodeImages = filepath.Join(in.bin, "node-images")
	if _, err := os.Stat(filepath.Join(in.nodeImages, "index.json")); err != nil {
		b.Skip("no bin/node-images: run make node-images")
	}
	for _, dir := range []string{"test-images", "images"} {
		if dir = filepath.Join(in.bin, dir); layoutHasVersion(dir, in.version) {
			in.images = dir
			break
		}
	}
	if in.images == "" {
		b.Skipf("no images of bin/eddy's version %s in bin/test-images or bin/images: run make test-images", in.version)
	}
	return in
}

// layoutHasVersion reports whether the OCI layout at dir names every
// controller's image with the tag version (its index.json's ref names).
func layoutHasVersion(dir, version string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return false
	}
	var idx struct {
		Manifests []struct{ Annotations map[string]string }
	}
	if json.Unmarshal(data, &idx) != nil {
		return false
	}
	tags := map[string]string{}
	for _, m := range idx.Manifests {
		ref := m.Annotations["org.opencontainers.image.ref.name"]
		repo, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		tags[repo] = tag
	}
	for _, c := range controllers {
		if tags[c] != version {
			return false
		}
	}
	return true
}

// node is the running cluster and what serves it.
type node struct {
	cluster *localcluster.Cluster
	cs      kubernetes.Interface
	c       client.Client
	refs    map[string]string // image name → <registry>/<name>@<digest>
	reg     *localcluster.Registry
}

// startNode takes the node lock, starts the registry with the images and
// the node-profile cluster; b.Cleanup stops them and releases the lock.
func startNode(ctx context.Context, b *testing.B, in inputs) *node {
	waited := time.Now()
	b.StopTimer() // another package's node test may hold the node
	release, err := localcluster.AcquireNodeLock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	b.Cleanup(release)
	b.Logf("node lock taken after %s", time.Since(waited).Round(time.Second))
	reg, err := localcluster.StartRegistry(localcluster.RegistryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(reg.Stop)
	n := &node{reg: reg, refs: map[string]string{}}
	for _, dir := range []string{in.images, in.nodeImages} {
		pushed, err := reg.PushLayout(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pushed {
			n.refs[p.Name] = p.Ref
		}
	}
	n.cluster, err = localcluster.Start(ctx, localcluster.Options{Profile: localcluster.ProfileNode,
		Timeout: 3 * time.Minute, Node: localcluster.NodeOptions{SandboxImage: n.refs["pause"]}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("component logs:\n%s", n.cluster.Logs(40))
		}
		n.cluster.Stop()
	})
	b.Logf("node profile started in %s", n.cluster.StartupDuration.Round(time.Millisecond))
	n.cs = kubernetes.NewForConfigOrDie(n.cluster.Config)
	if n.c, err = client.New(n.cluster.Config, client.Options{Scheme: scheme.New()}); err != nil {
		b.Fatal(err)
	}
	return n
}

// result holds one run's figures.
type result struct {
	loadStart, loadEnd string
	install            time.Duration
	idle, loaded       map[string]float64 // pod memory peak, MiB
	ksReady            time.Duration
	pods, local        []commitTimes
	localRSS           map[string]float64 // local process VmHWM, MiB
	podRSS             map[string]float64 // pod process VmHWM after the loaded measurement, MiB
	reps               int
}

// runNode runs every measurement on one cluster.
func runNode(b *testing.B, in inputs) result {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	n := startNode(ctx, b, in)
	r := result{loadStart: loadavg(), reps: in.reps}
	b.Logf("load average at start: %s", r.loadStart)

	var pods map[string]podInfo
	r.install, pods = installEddy(ctx, b, n, in)
	r.idle = podPeaks(b, pods)

	w := newWorkload(ctx, b, n)
	r.ksReady = w.applyAll(ctx, b)
	r.loaded = podPeaks(b, pods)
	r.podRSS = podProcessRSS(b, pods)
	for i := range in.reps {
		r.pods = append(r.pods, w.commitToReady(ctx, b, fmt.Sprintf("pods-%d", i)))
	}

	if log, err := n.cs.CoreV1().Pods(ns).GetLogs(pods["kustomize-controller"].name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
		b.Logf("kustomize-controller as a pod, last commit: %s", reconcileSummary(string(log), w.head))
	}

	procs := runLocal(ctx, b, n, in, w, pods)
	for i := range in.reps {
		r.local = append(r.local, w.commitToReady(ctx, b, fmt.Sprintf("local-%d", i)))
	}
	for _, p := range procs {
		if log, err := os.ReadFile(p.LogPath()); err == nil && p.Name() == "kustomize-controller" {
			b.Logf("kustomize-controller as a local process, last commit: %s", reconcileSummary(string(log), w.head))
		}
	}
	r.localRSS = map[string]float64{}
	for _, p := range procs {
		r.localRSS[p.Name()] = testenv.PeakRSSMiB(p.PID())
	}
	r.loadEnd = loadavg()
	b.Logf("load average at end: %s", r.loadEnd)
	return r
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
