package localcluster_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func start(t *testing.T, opts localcluster.Options) *localcluster.Cluster {
	t.Helper()
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("localcluster profile %s started in %s", c.Profile, c.StartupDuration.Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.Logs(60))
		}
		c.Stop()
	})
	return c
}

// alive reports whether a process with this pid exists (zombies included).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func assertGone(t *testing.T, pids, ports []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d is still alive", pid)
		}
	}
	for _, port := range ports {
		for !localcluster.PortFree(port) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !localcluster.PortFree(port) {
			t.Errorf("port %d is still in use", port)
		}
	}
}

func TestStopLeavesNoProcessOrPort(t *testing.T) {
	c := start(t, localcluster.Options{})
	cs := kubernetes.NewForConfigOrDie(c.Config)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// The version ldflags of tools/build.sh: clients such as kubectl parse these.
	if v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" || v.GitTreeState != "clean" {
		t.Errorf("server version %+v, want v1.37.2 (major 1, minor 37, tree clean)", v)
	}
	pids, ports, dir := c.Pids(), c.Ports(), c.Dir
	if len(pids) != 2 {
		t.Fatalf("api profile runs %d processes, want 2 (etcd, kube-apiserver)", len(pids))
	}
	comps := c.Components()
	if len(comps) != 2 || comps[0].Name != "etcd" || comps[1].Name != "kube-apiserver" ||
		comps[0].PID != pids[0] || comps[1].PID != pids[1] || filepath.Dir(comps[1].LogPath) != dir {
		t.Errorf("Components() = %+v, want etcd and kube-apiserver with pids %v and logs in %s", comps, pids, dir)
	}
	c.Stop()
	assertGone(t, pids, ports)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s still exists (%v)", dir, err)
	}
	c.Stop() // a second Stop is harmless
}

func TestAPIServerBinaryVersion(t *testing.T) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "k8s")
	if dir := os.Getenv("EDDY_K8S_BIN_DIR"); dir != "" {
		bin = dir
	}
	out, err := exec.Command(filepath.Join(bin, "kube-apiserver"), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-apiserver --version: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "Kubernetes v1.37.2" {
		t.Errorf("kube-apiserver --version printed %q, want %q", got, "Kubernetes v1.37.2")
	}
}

func TestRejectsIPv6ServiceCIDR(t *testing.T) {
	_, err := localcluster.Start(context.Background(), localcluster.Options{ServiceCIDR: "fd00:10:96::/108"})
	if err == nil || !strings.Contains(err.Error(), "only IPv4") {
		t.Fatalf("got %v; want an error saying only IPv4 is supported", err)
	}
}

func TestMissingBinariesSayMakeTools(t *testing.T) {
	_, err := localcluster.Start(context.Background(), localcluster.Options{BinDir: t.TempDir()})
	if !errors.Is(err, localcluster.ErrBinariesMissing) || !strings.Contains(err.Error(), "run `make tools`") {
		t.Fatalf("got %v; want an error telling to run `make tools`", err)
	}
}

// startHelper runs TestHelperCluster in a child process in mode (the value
// of EDDY_LOCALCLUSTER_HELPER), or TestHelperNodeCluster with env for mode
// "node", and returns it with the pids, ports and directory of the cluster
// it started.
func startHelper(t *testing.T, mode string, env ...string) (cmd *exec.Cmd, pids, ports []int, dir string) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestHelperCluster$")
	cmd.Env = append(os.Environ(), "EDDY_LOCALCLUSTER_HELPER="+mode)
	if mode == "node" {
		cmd = exec.Command(os.Args[0], "-test.run=^TestHelperNodeCluster$")
		cmd.Env = append(os.Environ(), env...)
	}
	if mode == "plain" {
		// A temporary directory of its own: a cluster started meanwhile by
		// another test binary sweeps the directories of dead owners under
		// os.TempDir(), and would remove the one this test expects left.
		tmp, err := os.MkdirTemp("", "lc-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(tmp) })
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "READY ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			kind, val, _ := strings.Cut(f, "=")
			n, _ := strconv.Atoi(val)
			switch kind {
			case "pid":
				pids = append(pids, n)
			case "port":
				ports = append(ports, n)
			case "dir":
				dir = val
			}
		}
		break
	}
	if len(pids) == 0 {
		t.Fatal("helper did not report a running cluster")
	}
	return cmd, pids, ports, dir
}

// TestSignalStopsCluster runs a helper process that starts a cluster with
// HandleSignals and then receives a signal: no component may outlive it.
func TestSignalStopsCluster(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, pids, ports, dir := startHelper(t, "handle")
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			assertGone(t, pids, ports)
			// A caught signal stops the cluster in order, which also removes its
			// directory; SIGKILL cannot be caught, the parent-death signal kills
			// the components and the next cluster started (here, or by a test
			// package running alongside) sweeps the directory.
			if sig == syscall.SIGKILL {
				start(t, localcluster.Options{})
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("cluster directory %s still exists after %s (%v)", dir, sig, err)
			}
		})
	}
}

// Without HandleSignals, Start installs no signal handler: a SIGTERM kills
// the process outright (the default action), so the cluster is not stopped
// in order and its directory stays (a handler removes it before the process
// dies); the components die with the process (parent-death signal).
func TestNoSignalHandlerUnlessAsked(t *testing.T) {
	cmd, pids, ports, dir := startHelper(t, "plain")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("helper ended with %v; want killed by SIGTERM", err)
	}
	assertGone(t, pids, ports)
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("cluster directory %s: %v; want it left, as no handler stopped the cluster", dir, err)
	}
	_ = os.RemoveAll(dir)
}

// TestHelperCluster is the helper process of TestSignalStopsCluster
// (EDDY_LOCALCLUSTER_HELPER=handle: with HandleSignals) and
// TestNoSignalHandlerUnlessAsked (plain: without).
func TestHelperCluster(t *testing.T) {
	mode := os.Getenv("EDDY_LOCALCLUSTER_HELPER")
	if mode == "" {
		t.Skip("helper process of TestSignalStopsCluster and TestNoSignalHandlerUnlessAsked")
	}
	c, err := localcluster.Start(context.Background(), localcluster.Options{HandleSignals: mode == "handle"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "READY dir=%s", c.Dir)
	for _, p := range c.Pids() {
		fmt.Fprintf(&b, " pid=%d", p)
	}
	for _, p := range c.Ports() {
		fmt.Fprintf(&b, " port=%d", p)
	}
	fmt.Println(b.String())
	time.Sleep(time.Minute)
	c.Stop()
	t.Fatal("helper was not signalled")
}

// TestFullProfileDeploymentBecomesAvailable runs a Deployment on the fake
// nodes: its pods are scheduled, kwok makes them Running and Ready, and the
// Deployment reports its replicas available, also after a scale-up.
func TestFullProfileDeploymentBecomesAvailable(t *testing.T) {
	c := start(t, localcluster.Options{Profile: localcluster.ProfileFull, Nodes: 2})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(c.Config)

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable := func(want int32) {
		t.Helper()
		begin := time.Now()
		var got *appsv1.Deployment
		for time.Since(begin) < 60*time.Second {
			var err error
			if got, err = cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			if got.Status.AvailableReplicas == want && got.Status.ObservedGeneration == got.Generation {
				t.Logf("deployment web: availableReplicas %d after %s", want, time.Since(begin).Round(time.Millisecond))
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("deployment web: availableReplicas %d, want %d (status %+v)", got.Status.AvailableReplicas, want, got.Status)
	}
	waitAvailable(2)

	scale, err := cs.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 4
	if _, err := cs.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(4)

	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			running++
		}
	}
	if running != 4 {
		t.Errorf("%d pods Running on a node, want 4", running)
	}
}
