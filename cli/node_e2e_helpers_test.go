package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// nodeEnv is what the e2e tests of Eddy as users run it on a real node
// share: the built bin/eddy, the controllers' images (bin/test-images or
// bin/images) and bin/node-images pushed to a local registry, and a
// node-profile cluster whose node pulls from it. eddy install or eddy
// bootstrap then runs the controllers as pods.
type nodeEnv struct {
	root, eddy, version string
	// Registry serves the images; Refs names each pushed image (its
	// repository's last element, e.g. tinyapp) by digest.
	Registry *localcluster.Registry
	Refs     map[string]string
	Cluster  *localcluster.Cluster
	CS       kubernetes.Interface
	Client   client.Client
	// Before is the machine's localcluster.HostState before the cluster
	// started.
	Before string
	state  string // the user's XDG_STATE_HOME
	// diagnosed: the cluster's state was logged (once).
	diagnosed bool
}

// longNodeSuite skips the test unless EDDY_NODE_SUITE=full (`make
// test-node`, which CI runs after `make test`): the long real-node
// scenarios would take make test past its time budget, while
// TestInstallRunsControllersAsPods and pkg/localcluster's node tests stay
// in it as the short form.
func longNodeSuite(t *testing.T) {
	t.Helper()
	if os.Getenv("EDDY_NODE_SUITE") != "full" {
		t.Skip("part of the long real-node suite: make test-node runs it")
	}
}

// startNodeEnv starts a nodeEnv for the test, stopped at its end, or skips
// the test when the machine cannot run the node profile or the images are
// not built. It holds the machine's node lock until the test ends (waiting
// for it first: the caller's deadlines start after).
func startNodeEnv(t *testing.T) *nodeEnv {
	t.Helper()
	if err := localcluster.CheckNodeProfile(""); errors.Is(err, localcluster.ErrNodeUnsupported) {
		t.Skip(err)
	}
	root, eddy := built(t)
	nodeImages := filepath.Join(root, "bin", "node-images")
	if _, err := os.Stat(filepath.Join(nodeImages, "index.json")); err != nil {
		t.Skip("no bin/node-images: run make node-images")
	}
	e := &nodeEnv{root: root, eddy: eddy, version: builtVersion(t), Refs: map[string]string{}, state: t.TempDir()}
	images := controllerImages(t, root, e.version)
	// pkg/localcluster's node tests may run a node meanwhile (go test runs
	// packages in parallel): one node per machine.
	release, err := localcluster.AcquireNodeLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if e.Before, err = localcluster.HostState(); err != nil {
		t.Fatal(err)
	}
	if e.Registry, err = localcluster.StartRegistry(localcluster.RegistryOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Registry.Stop)
	for _, dir := range []string{images, nodeImages} {
		pushed, err := e.Registry.PushLayout(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pushed {
			e.Refs[p.Name] = p.Ref
		}
	}
	e.Cluster, err = localcluster.Start(ctx, localcluster.Options{Profile: localcluster.ProfileNode,
		Timeout: 3 * time.Minute, Node: localcluster.NodeOptions{SandboxImage: e.Refs["pause"]}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.diagnose(t)
		}
		e.Cluster.Stop()
	})
	t.Logf("node profile started in %s", e.Cluster.StartupDuration.Round(time.Millisecond))
	e.CS = kubernetes.NewForConfigOrDie(e.Cluster.Config)
	ctrllog.SetLogger(logr.Discard()) // as eddy's main: the client's own logging is not wanted
	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	return e
}

// controllerImages is the layout of the controllers' images of the given
// version, found as `eddy dev up --node real` finds it (bin/images of make
// images, else bin/test-images of make test-images, which make test
// builds). The test skips without one.
func controllerImages(t *testing.T, root, version string) string {
	t.Helper()
	imgs, err := dev.FindNodeImages(root, version)
	if err != nil {
		t.Skip(err)
	}
	t.Logf("images from %s", imgs.Controllers)
	return imgs.Controllers
}

// eddyMust runs the built bin/eddy with the cluster's kubeconfig, logs the
// command, its output and duration, and fails the test on error.
func (e *nodeEnv) eddyMust(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, e.eddy, args...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+e.state, "KUBECONFIG="+e.Cluster.KubeconfigPath)
	out, err := cmd.CombinedOutput()
	t.Logf("$ eddy %s   (%s, err=%v)\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), err, out)
	if err != nil {
		t.Fatalf("eddy %s failed", args[0])
	}
	return string(out)
}

// waitControllerPods waits for each installed controller's one pod to be
// Ready and returns them; start is when the installation began, for the
// log.
func (e *nodeEnv) waitControllerPods(t *testing.T, ctx context.Context, start time.Time) map[string]*corev1.Pod {
	t.Helper()
	pods := map[string]*corev1.Pod{}
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, c := range installedControllers {
			p, err := readyPod(ctx, e.CS, c)
			if err != nil || p == nil {
				return false, err
			}
			pods[c] = p
		}
		return true, nil
	}); err != nil {
		t.Fatalf("controllers' pods not Ready: %v", err)
	}
	t.Logf("installation start to every controller's pod Ready: %s", time.Since(start).Round(100*time.Millisecond))
	return pods
}

// diagnose logs, once and while the cluster runs, the pods of flux-system
// and default with their logs and events, and the components' logs.
func (e *nodeEnv) diagnose(t *testing.T) {
	if e.diagnosed {
		return
	}
	e.diagnosed = true
	logPods(t, e.CS, "flux-system", "default")
	t.Logf("component logs:\n%s", e.Cluster.Logs(80))
}

// logPods logs the pods of the namespaces (by default flux-system), their
// logs and the namespaces' events.
func logPods(t *testing.T, cs kubernetes.Interface, namespaces ...string) {
	ctx := context.Background()
	if len(namespaces) == 0 {
		namespaces = []string{"flux-system"}
	}
	for _, ns := range namespaces {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("pods: %v", err)
			return
		}
		for _, p := range l.Items {
			b, _ := json.Marshal(p.Status)
			t.Logf("pod %s/%s: %s", ns, p.Name, b)
			logs, _ := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: new(int64(30))}).DoRaw(ctx)
			t.Logf("pod %s/%s log:\n%s", ns, p.Name, logs)
		}
		if ev, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, e := range ev.Items {
				t.Logf("event %s %s/%s %s: %s", ns, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
}
