package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestDevUpRealNodeRunsControllersAsPodsAndDownLeavesNothing runs `eddy
// dev up --node real --detach` at a terminal on a repository of one
// ConfigMap, one Deployment of tinyapp, named by eddy dev's registry
// address, and one ImageRepository: the controllers, the image
// controllers among them, run as pods from the images of the build's
// version, the repository is synced, the application's pod runs; then
// `eddy dev down` at a terminal leaves no process, port, container (its
// shim), mount, network device, nftables table or cgroup of the node.
func TestDevUpRealNodeRunsControllersAsPodsAndDownLeavesNothing(t *testing.T) {
	longNodeSuite(t)
	u, repo, image, version := devNodeUser(t)
	// Only its kind matters here: it makes eddy dev install the image controllers.
	imageRepo := "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: tinyapp\n  namespace: flux-system\n" +
		"spec:\n  image: " + image[:strings.LastIndex(image, ":")] + "\n  interval: 1h\n  insecure: true\n"
	if err := os.WriteFile(filepath.Join(repo, "images.yaml"), []byte(imageRepo), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "an ImageRepository"}} {
		if _, err := gitserver.Git(repo, args...); err != nil {
			t.Fatal(err)
		}
	}
	before := nodeHostState(t)
	start := time.Now()
	up := u.startTTY(120, false, "dev", "up", "--node", "real", "--repo", repo, "--detach")
	screen := strings.Join(up.checkTerminal(8*time.Minute, false), "\n")
	t.Logf("eddy dev up --node real --detach: %s", time.Since(start).Round(100*time.Millisecond))
	for _, want := range []string{"environment running", "✔ up in ", "Registry: " + dev.DefaultRegistryAddr, strings.TrimPrefix(image, dev.DefaultRegistryAddr+"/"),
		"kustomization/flux-system", "Run `eddy dev down` to stop it."} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy dev up --node real --detach at a terminal does not show %q", want)
		}
	}
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatalf("after eddy dev up --node real --detach: %v", err)
	}
	if len(state.Controllers) != 0 {
		t.Errorf("--node real runs controllers as local processes: %+v", state.Controllers)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", state.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for _, c := range append(slices.Clone(installedControllers), "image-reflector-controller", "image-automation-controller") {
		p, err := readyPod(ctx, cs, c)
		if err != nil || p == nil {
			t.Errorf("%s: no Ready pod (%v)", c, err)
			continue
		}
		if img := p.Spec.Containers[0].Image; !strings.HasPrefix(img, dev.DefaultRegistryAddr+"/"+c+":"+version+"@sha256:") {
			t.Errorf("%s's pod runs image %s; want the build's from %s", c, img, dev.DefaultRegistryAddr)
		}
	}
	var app *corev1.Pod
	waitUntil(t, "the application's pod Running and Ready", 3*time.Minute, func() (bool, string) {
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=tinyapp"})
		if err != nil || len(l.Items) != 1 {
			return false, fmt.Sprintf("pods: %v %v", err, l)
		}
		app = &l.Items[0]
		b, _ := json.Marshal(app.Status)
		return app.Status.Phase == corev1.PodRunning && !podReadySince(app).IsZero(), string(b)
	})
	if got := app.Status.ContainerStatuses[0].Image; got != image {
		t.Errorf("the application's pod runs %s; want %s", got, image)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap default/settings: %v", err)
	}
	if out := u.must("dev", "status"); !strings.Contains(out, "registry:    "+dev.DefaultRegistryAddr) || !strings.Contains(out, "DEPLOYMENT") {
		t.Error("eddy dev status does not show the registry and the controllers' Deployments")
	}
	socket := filepath.Join(u.dir(), "cluster", "node", "containerd", "containerd.sock")
	if ids := ctrContainers(t, socket); !strings.Contains(ids, app.Status.ContainerStatuses[0].ContainerID[len("containerd://"):]) {
		t.Errorf("ctr -n k8s.io containers ls does not list the application's container; it lists:\n%s", ids)
	}

	if shims := shimsOf(u.dir()); len(shims) == 0 {
		t.Error("no containerd shim names the environment's directory: the check after eddy dev down would prove nothing")
	}

	start = time.Now()
	down := u.startTTY(120, false, "dev", "down")
	if screen := strings.Join(down.checkTerminal(3*time.Minute, false), "\n"); !strings.Contains(screen, "✔ stopped:") {
		t.Error("eddy dev down at a terminal does not say it stopped")
	}
	t.Logf("eddy dev down: %s", time.Since(start).Round(100*time.Millisecond))
	checkAllGone(t, state, u.dir())
	if _, err := os.Stat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("containerd's socket is left (%v)", err)
	}
	if shims := shimsOf(u.dir()); len(shims) > 0 {
		t.Errorf("containerd shims left: %v", shims)
	}
	checkHostStateIs(t, before)
	for _, d := range []string{"cluster", "registry", "storage"} {
		if fileExists(filepath.Join(u.dir(), d)) {
			t.Errorf("%s/ is left in the state directory", d)
		}
	}
}

// writeNodeRepo writes a ConfigMap and a Deployment of image, with a
// readiness probe, in namespace default.
func writeNodeRepo(t *testing.T, dir, image string) {
	t.Helper()
	files := map[string]string{
		"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  greeting: hello\n",
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: tinyapp
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: tinyapp}
  template:
    metadata:
      labels: {app: tinyapp}
    spec:
      containers:
      - name: app
        image: ` + image + `
        ports: [{containerPort: 9898}]
        readinessProbe:
          httpGet: {path: /readyz, port: 9898}
          periodSeconds: 1
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// layoutTag is the tag of the image of repository name (its last path
// element) in the OCI layout at dir.
func layoutTag(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Manifests []struct{ Annotations map[string]string }
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	for _, m := range idx.Manifests {
		ref := m.Annotations["org.opencontainers.image.ref.name"]
		repo, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		if repo == name {
			return tag
		}
	}
	t.Fatalf("no image %s in %s", name, dir)
	return ""
}

// ctrContainers lists the containers of containerd's k8s.io namespace
// through the node's socket, one ID a line.
func ctrContainers(t *testing.T, socket string) string {
	t.Helper()
	bin, err := localcluster.CoreDNSBinary() // beside ctr, in the binaries of make tools
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(filepath.Dir(bin), "ctr"), "--address", socket, "-n", "k8s.io", "containers", "ls", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr containers ls: %v: %s", err, out)
	}
	return string(out)
}

// nodeHostState is localcluster.HostState: what a node changes on the
// machine (mounts, devices, nftables tables, cgroups, sysctls, host
// directories, live shims).
func nodeHostState(t *testing.T) string {
	t.Helper()
	s, err := localcluster.HostState()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkHostStateIs waits (a killed shim may wait a moment to be reaped)
// until the machine's state is before again.
func checkHostStateIs(t *testing.T, before string) {
	t.Helper()
	var after string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		after = nodeHostState(t)
		return after == before, nil
	})
	if after != before {
		t.Errorf("machine state after eddy dev down differs from before eddy dev up:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// shimsOf are the command lines of the live containerd shims of the node
// whose containerd listens below dir (another node's, stopped before this
// one started, may still be exiting: the machine's count proves nothing).
func shimsOf(dir string) []string {
	var out []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		cl := strings.ReplaceAll(string(data), "\x00", " ")
		if err == nil && strings.Contains(cl, "containerd-shim") && strings.Contains(cl, dir) && dev.Alive(pidOf(f)) {
			out = append(out, cl)
		}
	}
	return out
}

// pidOf is the pid of /proc/<pid>/<file>.
func pidOf(procFile string) int {
	pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(procFile)))
	return pid
}

// TestDevDownSweepsARealNodeWhoseOwnerWasKilled: after the process that
// owns an `eddy dev up --node real` environment is killed outright (no
// Stop ran), `eddy dev status` says so and `eddy dev down` leaves nothing
// of the node on the machine:
// no shim, mount, network device, nftables table or cgroup.
func TestDevDownSweepsARealNodeWhoseOwnerWasKilled(t *testing.T) {
	longNodeSuite(t)
	u, repo, _, _ := devNodeUser(t)
	before := nodeHostState(t)
	u.must("dev", "up", "--node", "real", "--repo", repo, "--detach")
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatal(err)
	}
	if shims := shimsOf(u.dir()); len(shims) == 0 {
		t.Fatal("no containerd shim names the environment's directory: the check after eddy dev down would prove nothing")
	}
	if err := syscall.Kill(state.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the owner gone", time.Minute, func() (bool, string) {
		return syscall.Kill(state.PID, 0) != nil, fmt.Sprintf("process %d", state.PID)
	})
	oneLineError(t, u.fails("dev", "status"), fmt.Sprintf("its owner (pid %d) is gone", state.PID), "run `eddy dev down`")
	if out := u.must("dev", "down"); !strings.Contains(out, "stopped:") {
		t.Errorf("eddy dev down after the owner was killed does not say it stopped")
	}
	if shims := shimsOf(u.dir()); len(shims) > 0 {
		t.Errorf("containerd shims left: %v", shims)
	}
	checkHostStateIs(t, before)
	if fileExists(filepath.Join(u.dir(), "cluster")) {
		t.Error("cluster/ is left in the state directory")
	}
}

// devNodeUser skips unless the node profile, the images of the build's
// version and the node images are here; it takes the machine's node lock
// and returns a user whose state directory is short enough for
// containerd's socket paths (the kernel limits them; the test's own
// temporary directory exceeds it), and a Git repository of a ConfigMap and
// a tinyapp Deployment pulled from eddy dev's registry.
func devNodeUser(t *testing.T) (u *user, repo, image, version string) {
	t.Helper()
	if err := localcluster.CheckNodeProfile(""); err != nil {
		t.Skip(err)
	}
	release, err := localcluster.AcquireNodeLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	root, _ := built(t)
	version = builtVersion(t)
	if _, err := dev.FindNodeImages(root, version); err != nil {
		t.Skip(err)
	}
	image = dev.DefaultRegistryAddr + "/tinyapp:" + layoutTag(t, filepath.Join(root, "bin", "node-images"), "tinyapp")
	repo = t.TempDir()
	writeNodeRepo(t, repo, image)
	gitInit(t, repo)
	// Removed after newUser's cleanup has stopped the environment.
	short, err := os.MkdirTemp("", "eddy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	u = newUser(t)
	u.state = short
	return u, repo, image, version
}
