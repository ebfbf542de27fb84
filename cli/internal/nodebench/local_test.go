package nodebench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/process"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runLocal scales the controllers' Deployments to 0 and, once their pods
// are gone, runs the same built controllers as processes on the host with
// the cluster's kubeconfig, with the flags `eddy dev` gives them (leader
// election with its 15 s leases, events to notification-controller,
// source-controller's storage served and advertised on loopback). notification-
// and source-controller start first; kustomize- and helm-controller once
// the GitRepositories' artifacts are served by the local source-controller
// (the pod's storage went with it): started earlier, kustomize-controller's
// first reconciles of all 101 Kustomizations would fetch from the pod's
// Service name, which the host does not resolve, and retry for minutes. It
// returns once each process is ready and leads, and kustomize-controller's
// work queue is drained of its start-up reconciles.
func runLocal(ctx context.Context, b *testing.B, n *node, in inputs, w *workload, pods map[string]podInfo) []*process.Process {
	for _, c := range controllers {
		if _, err := n.cs.AppsV1().Deployments(ns).Patch(ctx, c, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := n.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, nil
	}); err != nil {
		b.Fatalf("the controllers' pods are not gone: %v", err)
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		b.Fatal(err)
	}
	l := &locals{n: n, in: in, logs: b.TempDir(), pods: pods, storage: ports[0], ncEvents: ports[1], ncReceiver: ports[2]}
	start := time.Now()
	// notification-controller first, so that the others' first events reach it.
	l.start(b, "notification-controller", "source-controller")
	l.waitReady(ctx, b)
	waitLocalArtifact(ctx, b, n, fmt.Sprintf("127.0.0.1:%d/", l.storage))
	l.start(b, "kustomize-controller", "helm-controller")
	l.waitReady(ctx, b)
	l.waitDrained(ctx, b, "kustomize-controller", "kustomization", kustomizations+1)
	b.Logf("local controllers ready, leading, kustomize-controller's queue drained after %s", time.Since(start).Round(100*time.Millisecond))
	w.waitApplied(ctx, b, 3*time.Minute)
	return l.procs
}

// locals are the controllers run as local processes.
type locals struct {
	n                             *node
	in                            inputs
	logs                          string
	pods                          map[string]podInfo
	storage, ncEvents, ncReceiver int
	procs                         []*process.Process
	health, metrics               []string // by index of procs
}

// start starts each controller as a process; b.Cleanup stops it.
func (l *locals) start(b *testing.B, names ...string) {
	for _, c := range names {
		ports, err := localcluster.FreePorts(2)
		if err != nil {
			b.Fatal(err)
		}
		args := []string{"--kubeconfig=" + l.n.cluster.KubeconfigPath, "--watch-all-namespaces",
			"--log-level=info", "--log-encoding=json", "--enable-leader-election",
			"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=2s",
			fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[0]), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[1])}
		switch c {
		case "notification-controller":
			args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", l.ncEvents), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", l.ncReceiver))
		case "source-controller":
			args = append(args, "--storage-path="+b.TempDir(), fmt.Sprintf("--storage-addr=127.0.0.1:%d", l.storage),
				fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", l.storage))
			fallthrough
		default:
			args = append(args, fmt.Sprintf("--events-addr=http://127.0.0.1:%d/", l.ncEvents))
		}
		p, err := process.Start(process.Spec{Name: c, Bin: filepath.Join(l.in.bin, c), Args: args,
			Env: []string{"RUNTIME_NAMESPACE=" + ns}, LogPath: filepath.Join(l.logs, c+".log")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if b.Failed() {
				b.Logf("%s log:\n%s", c, p.Tail(20))
			}
			p.Stop(10 * time.Second)
		})
		l.procs = append(l.procs, p)
		l.health = append(l.health, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0]))
		l.metrics = append(l.metrics, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]))
	}
}

// waitReady waits until every process answers its readiness probe and
// holds its controller's lease (no longer the pod's).
func (l *locals) waitReady(ctx context.Context, b *testing.B) {
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for i, p := range l.procs {
			if exited, err := p.Exited(); exited {
				return false, fmt.Errorf("%s exited: %v: %s", p.Name(), err, p.Tail(5))
			}
			resp, err := hc.Get(l.health[i])
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false, nil
			}
			lease, err := l.n.cs.CoordinationV1().Leases(ns).Get(ctx, p.Name()+"-leader-election", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if h := lease.Spec.HolderIdentity; h == nil || *h == "" || strings.HasPrefix(*h, l.pods[p.Name()].name) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		b.Fatalf("local controllers not ready and leading: %v", err)
	}
}

// waitLocalArtifact asks for a reconcile of both GitRepositories and
// waits until their artifacts' URLs are the local source-controller's (the
// pod's storage went with it: the artifacts are built again on the host).
func waitLocalArtifact(ctx context.Context, b *testing.B, n *node, addr string) {
	for _, name := range []string{sourceName, appSource} {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, "local-"+time.Now().Format(time.RFC3339Nano))
		if err := n.c.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
			client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			b.Fatal(err)
		}
		var url string
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var g sourcev1.GitRepository
			if err := n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil {
				return false, nil
			}
			if g.Status.Artifact != nil {
				url = g.Status.Artifact.URL
			}
			return strings.Contains(url, addr), nil
		}); err != nil {
			b.Fatalf("GitRepository %s's artifact is not served by the local source-controller (%s): %s: %v", name, addr, url, err)
		}
	}
}

// waitDrained waits until the controller's work queue name (its
// controller-runtime metrics) has taken at least adds items, holds none
// and works on none: its start-up reconciles are done.
func (l *locals) waitDrained(ctx context.Context, b *testing.B, controller, name string, adds int) {
	url := ""
	for i, p := range l.procs {
		if p.Name() == controller {
			url = l.metrics[i]
		}
	}
	var last map[string]float64
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, nil
		}
		last = map[string]float64{}
		for _, line := range strings.Split(string(body), "\n") {
			metric, value, ok := strings.Cut(line, " ")
			family, labels, _ := strings.Cut(metric, "{")
			if !ok || !strings.Contains(labels, fmt.Sprintf("name=%q", name)) {
				continue
			}
			v, _ := strconv.ParseFloat(value, 64)
			last[family] += v // a family may have more lines (e.g. by priority)
		}
		return last["workqueue_adds_total"] >= float64(adds) && last["workqueue_depth"] == 0 &&
			last["workqueue_unfinished_work_seconds"] == 0, nil
	}); err != nil {
		b.Fatalf("%s's work queue %s not drained: %v (%v)", controller, name, err, last)
	}
}
