package localcluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

const (
	pauseImage = "localhost/eddy-test/pause:3.10"
	echoImage  = "localhost/eddy-test/echo:1"
)

// nodeOptions are the node profile's options with the pause and echo
// images as archives (in archives when given, else built here).
func nodeOptions(t *testing.T, archives ...string) localcluster.Options {
	t.Helper()
	if len(archives) == 0 {
		archives = []string{ociArchive(t, pauseImage, pauseBinary(t)), ociArchive(t, echoImage, echoBinary(t))}
	}
	return localcluster.Options{
		Profile: localcluster.ProfileNode,
		Timeout: 3 * time.Minute,
		Node:    localcluster.NodeOptions{SandboxImage: pauseImage, ImageArchives: archives},
	}
}

// startNode starts the node profile with the pause and echo images, or
// skips the test with the one line saying what this machine lacks.
func startNode(t *testing.T) *localcluster.Cluster {
	t.Helper()
	skipUnlessNodeProfile(t)
	c, err := localcluster.Start(context.Background(), nodeOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("localcluster profile node started in %s", c.StartupDuration.Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.Logs(60))
		}
		c.Stop()
	})
	return c
}

// skipUnlessNodeProfile skips the test, with the one line saying what is
// missing, on a machine that cannot run the node profile.
func skipUnlessNodeProfile(t *testing.T) {
	t.Helper()
	if err := localcluster.CheckNodeProfile(""); errors.Is(err, localcluster.ErrNodeUnsupported) {
		t.Skip(err)
	}
	lockNode(t)
}

// lockNode holds the machine's node lock for the rest of t (once per test):
// another package's test binary may run a node meanwhile.
func lockNode(t *testing.T) {
	t.Helper()
	if nodeLocked[t.Name()] {
		return
	}
	release, err := localcluster.AcquireNodeLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nodeLocked[t.Name()] = true
	t.Cleanup(func() { delete(nodeLocked, t.Name()); release() })
}

// nodeLocked names the tests holding the node lock (tests of this package
// run one at a time).
var nodeLocked = map[string]bool{}

// waitPod waits until the pod is Ready (or, with succeeded, has
// succeeded) and returns it.
func waitPod(t *testing.T, cs kubernetes.Interface, name string, succeeded bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	begin := time.Now()
	defer func() {
		if pod != nil {
			t.Logf("pod %s: %s after %s", name, pod.Status.Phase, time.Since(begin).Round(10*time.Millisecond))
		}
	}()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, nil
		}
		if pod.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s failed", name)
		}
		if succeeded {
			return pod.Status.Phase == corev1.PodSucceeded, nil
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s: %v; status %+v", name, err, pod.Status)
	}
	return pod
}

func pod(name string, labels map[string]string, args ...string) *corev1.Pod {
	image := pauseImage
	if len(args) > 0 {
		image = echoImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Args: args}},
		},
	}
}

// TestNodeProfileRunsAPod runs the pause image as a real container on the
// real node, and a Service whose pod answers through kube-proxy from the
// host and, by its DNS name, from another pod.
func TestNodeProfileRunsAPod(t *testing.T) {
	c := startNode(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(c.Config)

	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("pause", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, cs, "pause", false)
	if p.Spec.NodeName != localcluster.NodeName || p.Status.PodIP == "" {
		t.Fatalf("pause pod on node %q with IP %q; want node %s and a pod IP", p.Spec.NodeName, p.Status.PodIP, localcluster.NodeName)
	}
	// A real container: its process runs under the node's cgroup root.
	var cid string
	for _, s := range p.Status.ContainerStatuses {
		cid = s.ContainerID
	}
	if !strings.HasPrefix(cid, "containerd://") {
		t.Fatalf("container ID %q; want one of containerd", cid)
	}

	labels := map[string]string{"app": "echo"}
	web := pod("echo", labels, "-listen=:8080")
	web.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	svc, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, "echo", false)
	url := "http://" + svc.Spec.ClusterIP + "/"

	// From another pod, by the Service's short name (the cluster DNS and the
	// pod's search path), through kube-proxy's rules (the client retries
	// until kube-proxy has synced the Service).
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("client", nil, "-get=http://echo/"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, "client", true)
	logs, err := cs.CoreV1().Pods("default").GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || strings.TrimSpace(string(logs)) != "echo" {
		t.Errorf("client pod's log %q (%v); want the echo pod's hostname", logs, err)
	}
	// From the host: the same binary, run here.
	out, err := exec.Command(echoBinary(t), "-get="+url).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "echo" {
		t.Errorf("GET %s from the host: %q (%v); want the echo pod's hostname", url, out, err)
	}
}

// TestNodeProfileStopLeavesNothing checks that after Stop nothing of the
// node is left: no mount, network device, nftables table, cgroup, process
// or changed sysctl, and no file where the node writes outside its
// directory.
func TestNodeProfileStopLeavesNothing(t *testing.T) {
	skipUnlessNodeProfile(t)
	before := hostState(t)
	c := startNode(t)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod("pause", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, "pause", false)
	dir := c.Dir
	if during := hostState(t); during == before {
		t.Fatal("the running node changed nothing that hostState sees: the check would prove nothing")
	}
	begin := time.Now()
	c.Stop()
	t.Logf("Stop took %s", time.Since(begin).Round(10*time.Millisecond))
	if err := c.StopError(); err != nil {
		t.Fatal(err)
	}
	if after := hostState(t); after != before {
		t.Errorf("machine state after Stop differs from before Start:\n--- before\n%s\n--- after\n%s", before, after)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still exists (%v)", dir, err)
	}
}

// hostState describes what a node may change on the machine, one line per
// item, sorted.
func hostState(t *testing.T) string {
	t.Helper()
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mounts:\n%s", run("findmnt", "-rn", "-o", "TARGET,FSTYPE"))
	fmt.Fprintf(&b, "links:\n%s", run("sh", "-c", "ip -o link show | cut -d' ' -f2"))
	fmt.Fprintf(&b, "nft:\n%s", run("nft", "list", "tables"))
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/eddy-node")
	fmt.Fprintf(&b, "cgroups: %v\n", cgroups)
	for _, k := range []string{"net/ipv4/ip_forward", "vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops",
		"fs/inotify/max_user_instances", "vm/panic_on_oom", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", k))
		fmt.Fprintf(&b, "sysctl %s=%s", k, v)
	}
	for _, d := range []string{"/var/lib/kubelet", "/var/log/containers", "/var/lib/cni", "/run/containerd", "/run/mount", "/opt/containerd", "/var/lib/containerd"} {
		entries, err := os.ReadDir(d)
		fmt.Fprintf(&b, "%s: %d entries (%v)\n", d, len(entries), errors.Is(err, os.ErrNotExist))
	}
	fmt.Fprintf(&b, "live shims: %d\n", liveShims())
	return b.String()
}

// liveShims counts the containerd shims running on the machine (an exited
// one may wait a moment for init to reap it).
func liveShims() int {
	n := 0
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm is the first 15 bytes of the name.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || len(s) < end+3 {
			continue
		}
		if strings.HasPrefix(s[open+1:end], "containerd-shim") && s[end+2] != 'Z' {
			n++
		}
	}
	return n
}

// TestNodeProfileCrashIsSweptAtNextStart checks that a second node-profile
// cluster is refused while one runs, then kills (SIGKILL) the process that
// runs it with a pod: containerd's shims and the
// containers outlive it, with their mounts, network devices, cgroups and
// the changed sysctls. The next node-profile Start sweeps all of it, and
// after its Stop the machine is as it was.
func TestNodeProfileCrashIsSweptAtNextStart(t *testing.T) {
	skipUnlessNodeProfile(t)
	before := hostState(t)
	archives := []string{ociArchive(t, pauseImage, pauseBinary(t)), ociArchive(t, echoImage, echoBinary(t))}
	cmd, _, _, dir := startHelper(t, "node", "EDDY_LOCALCLUSTER_NODE_IMAGES="+strings.Join(archives, ","))
	// One node per machine: a second Start while the owner lives is refused,
	// naming it, and changes nothing of the running node.
	running := hostState(t)
	_, err := localcluster.Start(context.Background(), nodeOptions(t, archives...))
	if want := fmt.Sprintf("already runs on this machine (process %d", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second node-profile Start: %v; want an error saying %q", err, want)
	}
	if after := hostState(t); after != running {
		t.Errorf("the refused Start changed the running node:\n--- before\n%s\n--- after\n%s", running, after)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if liveShims() == 0 {
		t.Fatal("no containerd shim outlived the killed owner: the sweep would have nothing to do")
	}
	if crashed := hostState(t); crashed == before {
		t.Fatal("the killed cluster left nothing: the sweep would have nothing to do")
	}

	c := startNode(t)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed cluster's directory %s is still there after the next Start (%v)", dir, err)
	}
	c.Stop()
	if err := c.StopError(); err != nil {
		t.Fatal(err)
	}
	if after := hostState(t); after != before {
		t.Errorf("machine state after the sweep and Stop differs from before:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// TestNodeProfileSignalSweeps sends SIGTERM to a process that runs a
// node-profile cluster with a pod and Options.HandleSignals: the handler's
// Stop sweeps the node before the process dies, with no later Start.
func TestNodeProfileSignalSweeps(t *testing.T) {
	skipUnlessNodeProfile(t)
	before := hostState(t)
	archives := []string{ociArchive(t, pauseImage, pauseBinary(t)), ociArchive(t, echoImage, echoBinary(t))}
	cmd, _, _, dir := startHelper(t, "node", "EDDY_LOCALCLUSTER_NODE_IMAGES="+strings.Join(archives, ","),
		"EDDY_LOCALCLUSTER_NODE_SIGNALS=1")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if after := hostState(t); after != before {
		t.Errorf("machine state after SIGTERM differs from before:\n--- before\n%s\n--- after\n%s", before, after)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still exists after SIGTERM (%v)", dir, err)
	}
}

// TestHelperNodeCluster is the helper process of
// TestNodeProfileCrashIsSweptAtNextStart and TestNodeProfileSignalSweeps:
// it starts a node-profile cluster (with HandleSignals when
// EDDY_LOCALCLUSTER_NODE_SIGNALS is set), runs a pod and waits for a
// signal.
func TestHelperNodeCluster(t *testing.T) {
	images := os.Getenv("EDDY_LOCALCLUSTER_NODE_IMAGES")
	if images == "" {
		t.Skip("helper process of TestNodeProfileCrashIsSweptAtNextStart")
	}
	opts := nodeOptions(t, strings.Split(images, ",")...)
	opts.HandleSignals = os.Getenv("EDDY_LOCALCLUSTER_NODE_SIGNALS") != ""
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod("pause", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, "pause", false)
	fmt.Printf("READY dir=%s pid=%d\n", c.Dir, os.Getpid())
	time.Sleep(time.Minute)
	c.Stop()
	t.Fatal("helper was not killed")
}

// TestNodeProfilePullsFromTheLocalRegistry runs the node with the images
// make node-images builds, pulled from the local registry (nothing
// imported): containerd pulls the pause image as the sandbox image and
// the tiny application for a pod whose readiness probe passes.
func TestNodeProfilePullsFromTheLocalRegistry(t *testing.T) {
	skipUnlessNodeProfile(t)
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		t.Skip(err)
	}
	layoutDir := filepath.Join(root, "bin", "node-images")
	if _, err := os.Stat(filepath.Join(layoutDir, "index.json")); err != nil {
		t.Skip("no bin/node-images: run make node-images")
	}
	r, err := localcluster.StartRegistry(localcluster.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	pushed, err := r.PushLayout(context.Background(), layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, p := range pushed {
		refs[p.Name] = p.Ref
	}
	if refs["pause"] == "" || refs["tinyapp"] == "" {
		t.Fatalf("bin/node-images pushed %v; want pause and tinyapp", refs)
	}
	c, err := localcluster.Start(context.Background(), localcluster.Options{Profile: localcluster.ProfileNode,
		Timeout: 3 * time.Minute, Node: localcluster.NodeOptions{SandboxImage: refs["pause"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.Logs(60))
		}
		c.Stop()
	})
	cs := kubernetes.NewForConfigOrDie(c.Config)
	app := pod("tinyapp", nil)
	app.Spec.Containers[0].Image = refs["tinyapp"]
	app.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	app.Spec.Containers[0].Args = []string{"--port=9898"}
	app.Spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(9898)}}}
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, "tinyapp", false)
}
