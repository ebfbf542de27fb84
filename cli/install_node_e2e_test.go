package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// installedControllers are the controllers `eddy install` runs by default.
var installedControllers = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}

// TestInstallRunsControllersAsPods installs Eddy with the built bin/eddy
// into a cluster of the node profile (a real kubelet and containerd), the
// images of make images served by the local registry: each controller's
// Deployment Available and its pod Ready from its image (by the layout's
// digest), its process running as 65534 with a read-only root filesystem
// (read from the host's /proc), its log JSON lines read through the API,
// the image's binary printing the build's version, and eddy check and the
// real flux check passing.
func TestInstallRunsControllersAsPods(t *testing.T) {
	e := startNodeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cs, refs, version := e.CS, e.Refs, e.version

	start := time.Now()
	e.eddyMust(t, ctx, "install", "--registry="+e.Registry.Host(), "--version="+version, "--timeout=5m")
	pods := e.waitControllerPods(t, ctx, start)

	for _, c := range installedControllers {
		p := pods[c]
		st := p.Status.ContainerStatuses[0]
		if _, digest, _ := strings.Cut(refs[c], "@"); !strings.HasSuffix(st.ImageID, "@"+digest) {
			t.Errorf("%s runs image %s; want the layout's %s", c, st.ImageID, refs[c])
		}
		if st.RestartCount != 0 {
			t.Errorf("%s restarted %d times", c, st.RestartCount)
		}
		// Ready within the readiness probe's budget: the container started
		// to Ready in less than initialDelay + failureThreshold periods.
		probe := p.Spec.Containers[0].ReadinessProbe
		budget := time.Duration(probe.InitialDelaySeconds+probe.PeriodSeconds*probe.FailureThreshold) * time.Second
		started, ready := st.State.Running.StartedAt.Time, podReadySince(p)
		if ready.Sub(started) > budget {
			t.Errorf("%s Ready %s after its container started; the readiness probe's budget is %s", c, ready.Sub(started), budget)
		}
		t.Logf("%s: pod created +%s, container started +%s, Ready +%s after eddy install started", c,
			p.CreationTimestamp.Sub(start).Round(time.Second), started.Sub(start).Round(time.Second), ready.Sub(start).Round(time.Second))

		pid, cg := containerProcess(t, strings.TrimPrefix(st.ContainerID, "containerd://"))
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); !strings.HasPrefix(string(cmdline), "/"+c+"\x00") {
			t.Errorf("%s: the process of its container's cgroup, %d, runs %q", c, pid, cmdline)
		}
		if ids := procIDs(t, pid, "Uid:"); ids != "65534 65534 65534 65534" {
			t.Errorf("%s runs as uids (real, effective, saved, fs) %s; want 65534", c, ids)
		}
		if ids := procIDs(t, pid, "Gid:"); ids != "65534 65534 65534 65534" {
			t.Errorf("%s runs as gids %s; want 65534", c, ids)
		}
		if opts := mountOptions(t, pid, "/"); !hasOption(opts, "ro") {
			t.Errorf("%s's root filesystem is mounted %s; want read-only", c, opts)
		}
		// The writable directories are the Deployment's volumes (/tmp,
		// and source-controller's /data).
		for _, m := range p.Spec.Containers[0].VolumeMounts {
			if m.ReadOnly { // the service account token
				continue
			}
			if opts := mountOptions(t, pid, m.MountPath); !hasOption(opts, "rw") {
				t.Errorf("%s's %s is mounted %q; want read-write", c, m.MountPath, opts)
			}
		}
		podPeak, _ := os.ReadFile(filepath.Join(filepath.Dir(cg), "memory.max_usage_in_bytes"))
		peak, _ := os.ReadFile(filepath.Join(cg, "memory.max_usage_in_bytes"))
		t.Logf("%s: pid %d, memory peak: pod %s MiB, container %s MiB", c, pid, mib(podPeak), mib(peak))

		logs, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s's log: %v", c, err)
		}
		checkJSONLog(t, c, string(logs))
		for _, l := range strings.Split(string(logs), "\n") {
			if strings.Contains(l, `"level":"error"`) {
				t.Errorf("%s logged an error: %s", c, l)
			}
		}
	}
	// Leader election with the installed RBAC: each pod comes to hold its
	// controller's lease (after Ready: the health endpoints serve before
	// the election).
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, c := range installedControllers {
			l, err := cs.CoordinationV1().Leases("flux-system").Get(ctx, c+"-leader-election", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if h := l.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, pods[c].Name) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the controllers' pods do not all hold their leases flux-system/<controller>-leader-election: %v", err)
	}
	// source-controller made the artifact signing key in its namespace.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets("flux-system").Get(ctx, "source-controller-artifact-key", metav1.GetOptions{})
		return err == nil && len(s.Data["key"]) == 32, nil
	}); err != nil {
		t.Errorf("no Secret flux-system/source-controller-artifact-key with a 32-byte key: %v", err)
	}

	// eddy check and the real flux check against the controllers as pods.
	for _, bin := range []string{e.eddy, filepath.Join(e.root, "bin", "flux")} {
		c := exec.CommandContext(ctx, bin, "check")
		c.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.KubeconfigPath)
		o, err := c.CombinedOutput()
		t.Logf("$ %s check   (err=%v)\n%s", filepath.Base(bin), err, o)
		if err != nil || !strings.Contains(string(o), "all checks passed") {
			t.Errorf("%s check did not pass", filepath.Base(bin))
		}
	}
	// --version of each image's entrypoint, in a pod: its log is the
	// build's version.
	vp := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}
	for _, c := range installedControllers {
		vp.Spec.Containers = append(vp.Spec.Containers, corev1.Container{Name: c, Image: refs[c], Args: []string{"--version"}})
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, vp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "versions", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	}); err != nil {
		t.Fatalf("pod versions did not finish: %v", err)
	}
	for _, c := range installedControllers {
		logs, err := cs.CoreV1().Pods("default").GetLogs("versions", &corev1.PodLogOptions{Container: c}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(logs)), c+" "+version; got != want {
			t.Errorf("%s --version in its image printed %q; want %q", c, got, want)
		}
	}
}

// readyPod is the controller's one pod (label app=<controller> in
// flux-system) when it is Ready, else nil.
func readyPod(ctx context.Context, cs kubernetes.Interface, controller string) (*corev1.Pod, error) {
	l, err := cs.CoreV1().Pods("flux-system").List(ctx, metav1.ListOptions{LabelSelector: "app=" + controller})
	if err != nil || len(l.Items) != 1 {
		return nil, err
	}
	p := &l.Items[0]
	if podReadySince(p).IsZero() || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
		return nil, nil
	}
	return p, nil
}

func podReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// containerProcess finds the container's cgroup (a directory named by its
// ID under the node's cgroup root in the memory hierarchy) and its first
// process.
func containerProcess(t *testing.T, id string) (int, string) {
	t.Helper()
	var dir string
	_ = filepath.WalkDir("/sys/fs/cgroup/memory/eddy-node", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			dir = path
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		t.Fatalf("no cgroup of container %s under /sys/fs/cgroup/memory/eddy-node", id)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(b) + " x")[0])
	if err != nil {
		t.Fatalf("%s/cgroup.procs: %q", dir, b)
	}
	return pid, dir
}

// procIDs are the process's real, effective, saved and filesystem uids
// (line "Uid:" of its status) or gids ("Gid:").
func procIDs(t *testing.T, pid int, line string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == line {
			return strings.Join(f[1:], " ")
		}
	}
	t.Fatalf("no %s line in /proc/%d/status", line, pid)
	return ""
}

// mountOptions are the mount options of the mount point as the process
// sees it (/proc/<pid>/mountinfo: the mount point is the fifth field, the
// mount options the sixth; the last mount on a point is the one seen), ""
// when nothing is mounted there.
func mountOptions(t *testing.T, pid int, point string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) > 5 && f[4] == point {
			opts = f[5]
		}
	}
	return opts
}

func hasOption(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

func mib(b []byte) string {
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return "?"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64)
}

// checkJSONLog checks that every line of a controller's log is a JSON
// object with level, ts and msg, as Flux's controllers log.
func checkJSONLog(t *testing.T, controller, logs string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Errorf("%s logged nothing", controller)
		return
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["level"] == nil || m["ts"] == nil || m["msg"] == nil {
			t.Errorf("%s logged %q; want a JSON object with level, ts and msg", controller, l)
			return
		}
	}
}
