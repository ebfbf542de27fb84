package nodebench

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
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
// source-controller's storage served and advertised on loopback). It
// returns once each is ready and leads, and the GitRepository's artifact
// is served by the local source-controller.
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

	ports, err := localcluster.FreePorts(2*len(controllers) + 3)
	if err != nil {
		b.Fatal(err)
	}
	storage, ncEvents, ncReceiver := ports[0], ports[1], ports[2]
	logs := b.TempDir()
	var procs []*process.Process
	var health []string
	// notification-controller first, so that the others' first events reach it.
	for i, c := range []string{"notification-controller", "source-controller", "kustomize-controller", "helm-controller"} {
		hp, mp := ports[3+2*i], ports[4+2*i]
		args := []string{"--kubeconfig=" + n.cluster.KubeconfigPath, "--watch-all-namespaces",
			"--log-level=info", "--log-encoding=json", "--enable-leader-election",
			"--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s", "--leader-election-retry-period=2s",
			fmt.Sprintf("--health-addr=127.0.0.1:%d", hp), fmt.Sprintf("--metrics-addr=127.0.0.1:%d", mp)}
		switch c {
		case "notification-controller":
			args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", ncEvents), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", ncReceiver))
		case "source-controller":
			args = append(args, "--storage-path="+b.TempDir(), fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage),
				fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage))
			fallthrough
		default:
			args = append(args, fmt.Sprintf("--events-addr=http://127.0.0.1:%d/", ncEvents))
		}
		p, err := process.Start(process.Spec{Name: c, Bin: filepath.Join(in.bin, c), Args: args,
			Env: []string{"RUNTIME_NAMESPACE=" + ns}, LogPath: filepath.Join(logs, c+".log")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if b.Failed() {
				b.Logf("%s log:\n%s", c, p.Tail(20))
			}
			p.Stop(10 * time.Second)
		})
		procs = append(procs, p)
		health = append(health, fmt.Sprintf("http://127.0.0.1:%d/readyz", hp))
	}
	start := time.Now()
	waitLocalReady(ctx, b, n, procs, health, pods)
	b.Logf("local controllers ready and leading after %s", time.Since(start).Round(100*time.Millisecond))
	waitLocalArtifact(ctx, b, n, fmt.Sprintf("127.0.0.1:%d/", storage))
	w.waitApplied(ctx, b, 3*time.Minute)
	return procs
}

// waitLocalReady waits until every process answers its readiness probe and
// holds its controller's lease (no longer the pod's).
func waitLocalReady(ctx context.Context, b *testing.B, n *node, procs []*process.Process, health []string, pods map[string]podInfo) {
	hc := &http.Client{Timeout: 2 * time.Second}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for i, p := range procs {
			if exited, err := p.Exited(); exited {
				return false, fmt.Errorf("%s exited: %v: %s", p.Name(), err, p.Tail(5))
			}
			resp, err := hc.Get(health[i])
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false, nil
			}
			l, err := n.cs.CoordinationV1().Leases(ns).Get(ctx, p.Name()+"-leader-election", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if h := l.Spec.HolderIdentity; h == nil || *h == "" || strings.HasPrefix(*h, pods[p.Name()].name) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		b.Fatalf("local controllers not ready and leading: %v", err)
	}
}

// waitLocalArtifact asks for a reconcile of the GitRepository and waits
// until its artifact's URL is the local source-controller's (the pod's
// storage went with it: the artifact is built again on the host).
func waitLocalArtifact(ctx context.Context, b *testing.B, n *node, addr string) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, "local-"+time.Now().Format(time.RFC3339Nano))
	if err := n.c.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: sourceName, Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		b.Fatal(err)
	}
	var url string
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var g sourcev1.GitRepository
		if err := n.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: sourceName}, &g); err != nil {
			return false, nil
		}
		if g.Status.Artifact != nil {
			url = g.Status.Artifact.URL
		}
		return strings.Contains(url, addr), nil
	}); err != nil {
		b.Fatalf("the GitRepository's artifact is not served by the local source-controller (%s): %s: %v", addr, url, err)
	}
}
