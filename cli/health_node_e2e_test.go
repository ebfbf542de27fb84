package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// nodeEddy is a node-profile cluster with Eddy installed as pods from the
// local registry.
type nodeEddy struct {
	cluster  *localcluster.Cluster
	cs       kubernetes.Interface
	c        client.Client
	registry string            // host:port
	refs     map[string]string // image name → reference in the registry
	eddy     string
	state    string // XDG_STATE_HOME of bin/eddy
}

// startNodeEddy starts a nodeEnv (the node lock held, the images pushed,
// the node profile started) and runs eddy install --registry, as
// TestInstallRunsControllersAsPods does; it skips where those cannot run.
func startNodeEddy(t *testing.T) *nodeEddy {
	t.Helper()
	e := startNodeEnv(t)
	n := &nodeEddy{cluster: e.Cluster, cs: e.CS, c: e.Client, registry: e.Registry.Host(), refs: e.Refs, eddy: e.eddy, state: e.state}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e.eddyMust(t, ctx, "install", "--registry="+n.registry, "--version="+e.version, "--timeout=5m")
	return n
}

// run runs bin/eddy with args against the cluster.
func (n *nodeEddy) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, n.eddy, append(args, "--kubeconfig="+n.cluster.KubeconfigPath)...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+n.state)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// apply creates each YAML document of docs.
func (n *nodeEddy) apply(t *testing.T, ctx context.Context, docs ...string) {
	t.Helper()
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("%v in\n%s", err, d)
		}
		if err := n.c.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// eventSink is an HTTP server on the node IP that records the JSON events
// notification-controller posts (a Provider of type generic).
type eventSink struct {
	url    string
	mu     sync.Mutex
	events []sinkEvent
}

type sinkEvent struct {
	InvolvedObject struct{ Kind, Name string } `json:"involvedObject"`
	Reason         string                      `json:"reason"`
	Message        string                      `json:"message"`
}

func startEventSink(t *testing.T, addr string) *eventSink {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &eventSink{url: "http://" + l.Addr().String() + "/"}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev sinkEvent
		if json.Unmarshal(b, &ev) == nil {
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		}
	})}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return s
}

// find is the message of the first event of kind/name that contains all
// of want, "" when none has arrived.
func (s *eventSink) find(kind, name string, want ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.events {
		if ev.InvolvedObject.Kind == kind && ev.InvolvedObject.Name == name && containsAll(ev.Message, want) {
			return ev.Message
		}
	}
	return ""
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// appDeployment is a Deployment of the tiny application (Helm template
// syntax where name, image and args are template expressions).
func appDeployment(name, ns, image, args string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: %[3]s
        args: %[4]s
        readinessProbe: {httpGet: {path: /readyz, port: 9898}, periodSeconds: 2}
`, name, ns, image, args)
}

// readyCondition is obj's Ready condition (status, reason, message).
func readyCondition(u *unstructured.Unstructured) (string, string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// appPods are the pods of namespace ns by name.
func appPods(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) map[string]corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range l.Items {
		out[p.Name] = p
	}
	return out
}

// gone reports whether obj (apiVersion, kind, name) is not found.
func gone(ctx context.Context, c client.Client, apiVersion, kind, ns, name string) bool {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	return apierrors.IsNotFound(err)
}

// startGitRepo serves a repository with files on the node IP, which pods
// reach; it returns its URL.
func startGitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	srv, err := gitserver.Start(gitserver.Options{Root: root, Addr: localcluster.NodeIP + ":0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r, err := gitserver.NewRepo(root, "apps.git", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(files, "apps"); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/apps.git"
}

// waitPoll polls cond every 500ms until it holds or ctx ends.
func waitPoll(ctx context.Context, cond func(ctx context.Context) bool) error {
	return wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) { return cond(ctx), nil })
}

// healthFailures are the real failures of TestNodeHealthChecksSayWhyPodsAreNotReady:
// the tiny application exiting 1, an image the registry does not have, a
// readiness probe that never passes; want are the words the messages must
// hold, one of each set (the container may be between restarts).
var healthFailures = []struct {
	name string
	args string
	want []string
}{
	{"crash", `["--crash"]`, []string{"CrashLoopBackOff", "exit code 1"}},
	{"pull", `[]`, []string{"ImagePullBackOff", "ErrImagePull"}},
	{"unready", `["--unready"]`, []string{"running, not ready (Readiness probe failed: HTTP probe failed with statuscode: 503)"}},
}

// TestNodeHealthChecksSayWhyPodsAreNotReady runs Eddy as pods on a real
// node. For each real failure, a Kustomization (wait: true) and a
// HelmRelease (a chart of the same Git repository) report Ready=False
// with Flux's message first, then the Deployment, its pod and what its
// container shows; an Alert delivers that message to a generic Provider.
// Then eddy uninstall removes Eddy and leaves the applications' pods as
// they were: same pods, the healthy one not restarted.
func TestNodeHealthChecksSayWhyPodsAreNotReady(t *testing.T) {
	longNodeSuite(t)
	n := startNodeEddy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sink := startEventSink(t, localcluster.NodeIP+":0")
	files := map[string]string{
		"ok/deploy.yaml":   appDeployment("ks-ok", "apps", n.refs["tinyapp"], "[]"),
		"chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"chart/templates/deployment.yaml": appDeployment("{{ .Release.Name }}", "{{ .Release.Namespace }}",
			"{{ .Values.image }}", "{{ toJson .Values.args }}"),
	}
	image := func(name string) string {
		if name == "pull" {
			return n.registry + "/eddy/missing:v1"
		}
		return n.refs["tinyapp"]
	}
	for _, f := range healthFailures {
		files[f.name+"/deploy.yaml"] = appDeployment("ks-"+f.name, "apps", image(f.name), f.args)
	}
	url := startGitRepo(t, files)
	if _, err := n.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.apply(t, ctx, fmt.Sprintf(`apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: sink, namespace: flux-system}
spec: {type: generic, address: %q}`, sink.url), `apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: failures, namespace: flux-system}
spec:
  providerRef: {name: sink}
  eventSeverity: error
  eventSources: [{kind: Kustomization, name: "*"}, {kind: HelmRelease, name: "*"}]`, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: apps, namespace: flux-system}
spec: {url: %q, interval: 1h, ref: {branch: main}}`, url))
	kustomization := func(name, path string) string {
		return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec: {interval: 1h, path: ./%s, prune: true, wait: true, timeout: 40s, sourceRef: {kind: GitRepository, name: apps}}`, name, path)
	}
	n.apply(t, ctx, kustomization("ok", "ok"))
	for _, f := range healthFailures {
		n.apply(t, ctx, kustomization(f.name, f.name), fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %[1]s, namespace: flux-system}
spec:
  interval: 1h
  timeout: 40s
  targetNamespace: apps
  releaseName: hr-%[1]s
  chart: {spec: {chart: ./chart, sourceRef: {kind: GitRepository, name: apps}}}
  values: {image: %[2]q, args: %[3]s}`, f.name, image(f.name), f.args))
	}
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, n.cs)
		}
	})

	checkFailureMessages(t, ctx, n, sink)
	uctx, ucancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer ucancel()
	checkUninstallKeepsWorkloads(t, uctx, n)
}

// checkFailureMessages waits for each failure's Kustomization and
// HelmRelease to be Ready=False naming the Deployment and the reason, and
// for the alert's event with that message, and logs the messages.
func checkFailureMessages(t *testing.T, ctx context.Context, n *nodeEddy, sink *eventSink) {
	t.Helper()
	type check struct {
		kind, apiVersion, name, reason, prefix, object string
		want                                           []string
	}
	var checks []check
	for _, f := range healthFailures {
		checks = append(checks,
			check{"Kustomization", "kustomize.toolkit.fluxcd.io/v1", f.name, "HealthCheckFailed",
				"health check failed after ", "Deployment/apps/ks-" + f.name, f.want},
			check{"HelmRelease", "helm.toolkit.fluxcd.io/v2", f.name, "InstallFailed",
				"Helm install failed for release apps/hr-" + f.name + " with chart app@0.1.0: ", "Deployment/apps/hr-" + f.name, f.want})
	}
	start := time.Now()
	for _, c := range checks {
		// Flux's text first (the status InProgress, or Unknown when the
		// last read failed), then the object, its container and the reason.
		flux := "timeout waiting for: [" + c.object + " status: '"
		detail := "]: " + c.object + ": container app: "
		matches := func(msg string) bool {
			if !strings.HasPrefix(msg, c.prefix) || !strings.Contains(msg, flux) || !strings.Contains(msg, detail) {
				return false
			}
			for _, w := range c.want {
				if strings.Contains(msg, w) {
					return true
				}
			}
			return false
		}
		// Each check has its own time: one failing leaves the others theirs.
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		msg, status, reason := "", "", ""
		err := waitPoll(cctx, func(ctx context.Context) bool {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(c.apiVersion)
			u.SetKind(c.kind)
			if n.c.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: c.name}, u) != nil {
				return false
			}
			status, reason, msg = readyCondition(u)
			return status == "False" && reason == c.reason && matches(msg)
		})
		if err != nil {
			t.Errorf("%s/%s: Ready=%s %s %q; want False %s starting %q, then %q, %q and one of %q", c.kind, c.name, status, reason, msg,
				c.reason, c.prefix, flux, detail, c.want)
			continue
		}
		t.Logf("%s/%s Ready=False %s (+%s): %s", c.kind, c.name, reason, time.Since(start).Round(time.Second), msg)
		var ev string
		err = waitPoll(cctx, func(context.Context) bool {
			for _, w := range c.want {
				if ev = sink.find(c.kind, c.name, flux, detail, w); ev != "" {
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Errorf("%s/%s: no event with %q, %q and one of %q at the provider", c.kind, c.name, flux, detail, c.want)
			continue
		}
		t.Logf("%s/%s event at the provider: %s", c.kind, c.name, ev)
	}
}

// checkUninstallKeepsWorkloads runs eddy uninstall: the controllers, the
// CRDs and flux-system go; the pods of namespace apps stay (same pods, the
// healthy one's container not restarted).
func checkUninstallKeepsWorkloads(t *testing.T, ctx context.Context, n *nodeEddy) {
	t.Helper()
	before := appPods(t, ctx, n.cs, "apps")
	var okPod corev1.Pod
	for _, p := range before {
		if strings.HasPrefix(p.Name, "ks-ok-") {
			okPod = p
		}
	}
	if okPod.Name == "" || podReadySince(&okPod).IsZero() {
		t.Fatalf("no Ready pod of Deployment apps/ks-ok among %d pods", len(before))
	}
	start := time.Now()
	out, err := n.run(ctx, "uninstall", "--silent")
	t.Logf("$ eddy uninstall --silent   (%s, err=%v)\n%s", time.Since(start).Round(100*time.Millisecond), err, out)
	if err != nil {
		t.Fatal("eddy uninstall failed")
	}
	err = waitPoll(ctx, func(ctx context.Context) bool {
		return gone(ctx, n.c, "v1", "Namespace", "", "flux-system") &&
			gone(ctx, n.c, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "kustomizations.kustomize.toolkit.fluxcd.io") &&
			gone(ctx, n.c, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "helmreleases.helm.toolkit.fluxcd.io")
	})
	if err != nil {
		t.Fatalf("flux-system or the CRDs still there after eddy uninstall: %v", err)
	}
	t.Logf("eddy uninstall to flux-system and the CRDs gone: %s", time.Since(start).Round(100*time.Millisecond))
	after := appPods(t, ctx, n.cs, "apps")
	for name, p := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("pod apps/%s deleted by eddy uninstall", name)
		case a.UID != p.UID || a.DeletionTimestamp != nil:
			t.Errorf("pod apps/%s replaced or being deleted after eddy uninstall", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d pods in apps after eddy uninstall, %d before", len(after), len(before))
	}
	a := after[okPod.Name]
	if len(a.Status.ContainerStatuses) != 1 || a.Status.ContainerStatuses[0].ContainerID != okPod.Status.ContainerStatuses[0].ContainerID ||
		a.Status.ContainerStatuses[0].RestartCount != okPod.Status.ContainerStatuses[0].RestartCount || podReadySince(&a).IsZero() {
		t.Errorf("pod apps/%s's container restarted or not Ready after eddy uninstall: %+v", okPod.Name, a.Status.ContainerStatuses)
	}
	deps, err := n.cs.AppsV1().Deployments("apps").List(ctx, metav1.ListOptions{})
	if err != nil || len(deps.Items) != 1+2*len(healthFailures) {
		t.Errorf("Deployments in apps after eddy uninstall: %d, %v; want %d", len(deps.Items), err, 1+2*len(healthFailures))
	}
}
