package nodebench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// podInfo is a controller's Ready pod: its name and its container's ID.
type podInfo struct {
	name, containerID string
}

// installEddy runs `eddy install --registry …` and returns the time from
// its start until every controller's pod is Ready; then it waits, outside
// that time, until each pod holds its leader-election lease (idle: caches
// synced, leading).
func installEddy(ctx context.Context, b *testing.B, n *node, in inputs) (time.Duration, map[string]podInfo) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, in.eddy, "install", "--kubeconfig="+n.cluster.KubeconfigPath,
		"--registry="+n.reg.Host(), "--version="+in.version, "--timeout=5m")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+b.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("eddy install: %v\n%s", err, out)
	}
	pods := map[string]podInfo{}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, c := range controllers {
			p, err := readyPod(ctx, n, c)
			if err != nil || p == nil {
				return false, err
			}
			pods[c] = podInfo{name: p.Name, containerID: strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")}
		}
		return true, nil
	}); err != nil {
		b.Fatalf("controllers' pods not Ready: %v", err)
	}
	took := time.Since(start)
	b.Logf("eddy install to the four controllers' pods Ready: %s", took.Round(100*time.Millisecond))
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, c := range controllers {
			l, err := n.cs.CoordinationV1().Leases("flux-system").Get(ctx, c+"-leader-election", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if h := l.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, pods[c].name) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		b.Fatalf("the controllers' pods do not all hold their leases: %v", err)
	}
	return took, pods
}

// readyPod is the controller's one pod (label app=<controller> in
// flux-system) when it is Ready with its container running, else nil.
func readyPod(ctx context.Context, n *node, controller string) (*corev1.Pod, error) {
	l, err := n.cs.CoreV1().Pods("flux-system").List(ctx, metav1.ListOptions{LabelSelector: "app=" + controller})
	if err != nil || len(l.Items) != 1 {
		return nil, err
	}
	p := &l.Items[0]
	if !podReady(p) || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
		return nil, nil
	}
	return p, nil
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podPeaks reads each controller pod's memory peak in MiB: cgroup v1
// memory.max_usage_in_bytes of the pod's cgroup (the parent of its
// container's, under the node's cgroup root /eddy-node).
func podPeaks(b *testing.B, pods map[string]podInfo) map[string]float64 {
	out := map[string]float64{}
	for c, p := range pods {
		dir := containerCgroup(b, p.containerID)
		data, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "memory.max_usage_in_bytes"))
		if err != nil {
			b.Fatal(err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			b.Fatalf("%s: memory.max_usage_in_bytes %q", c, data)
		}
		out[c] = float64(v) / (1 << 20)
		b.Logf("%s pod cgroup: peak %.1f MiB; now %s", c, out[c], memoryStat(filepath.Dir(dir)))
	}
	return out
}

// memoryStat is the cgroup's total_rss, total_cache and total_mapped_file
// (memory.stat, hierarchical), in MiB.
func memoryStat(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 2 && (f[0] == "total_rss" || f[0] == "total_cache" || f[0] == "total_mapped_file") {
			v, _ := strconv.ParseFloat(f[1], 64)
			out = append(out, fmt.Sprintf("%s %.1f MiB", strings.TrimPrefix(f[0], "total_"), v/(1<<20)))
		}
	}
	return strings.Join(out, ", ")
}

// podProcessRSS reads the peak RSS (VmHWM) of each controller pod's
// process, the first of its container's cgroup: like for like with the
// local processes'.
func podProcessRSS(b *testing.B, pods map[string]podInfo) map[string]float64 {
	out := map[string]float64{}
	for c, p := range pods {
		data, err := os.ReadFile(filepath.Join(containerCgroup(b, p.containerID), "cgroup.procs"))
		if err != nil {
			b.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.Fields(string(data) + " x")[0])
		if err != nil {
			b.Fatalf("%s: cgroup.procs %q", c, data)
		}
		out[c] = testenv.PeakRSSMiB(pid)
	}
	return out
}

// containerCgroup is the directory named by the container's ID in the
// memory hierarchy under /eddy-node.
func containerCgroup(b *testing.B, id string) string {
	var dir string
	_ = filepath.WalkDir("/sys/fs/cgroup/memory/eddy-node", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			dir = path
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		b.Fatalf("no cgroup of container %s under /sys/fs/cgroup/memory/eddy-node", id)
	}
	return dir
}
