package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	yaml "sigs.k8s.io/yaml/goyaml.v2"
)

// checkDevInstalled runs `eddy check`, `eddy check --pre` and `eddy version`
// against a running eddy dev environment, which looks installed as flux's
// install does: the labelled CRDs, and each controller's Deployment, with 0
// replicas and the annotation saying it runs as a local process (no pod
// claims to be a controller). Against a namespace without controllers,
// check and version fail.
func checkDevInstalled(t *testing.T, u *user) {
	t.Helper()
	c := u.client()
	ctx := context.Background()
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(dev.Namespace), client.MatchingLabels{partOfLabel: partOfValue}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range deps.Items {
		names = append(names, d.Name)
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 || d.Annotations[dev.RunsAsAnnotation] != dev.RunsAsLocalProcess {
			t.Errorf("Deployment %s: replicas %v, annotation %s=%q; want 0 replicas and %s", d.Name,
				ptr.Deref(d.Spec.Replicas, 1), dev.RunsAsAnnotation, d.Annotations[dev.RunsAsAnnotation], dev.RunsAsLocalProcess)
		}
	}
	if strings.Join(names, " ") != "application-controller helm-controller kustomize-controller notification-controller source-controller" {
		t.Errorf("eddy dev's controller Deployments: %v; want the five controllers", names)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(dev.Namespace)); err != nil || len(pods.Items) != 0 {
		t.Errorf("eddy dev runs %d pods in %s (err %v); want none: the controllers are processes", len(pods.Items), dev.Namespace, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "gitrepositories.source.toolkit.fluxcd.io"}, crd); err != nil {
		t.Fatal(err)
	}
	ver := crd.Labels[versionLabel]
	if ver == "" || crd.Labels[partOfLabel] != partOfValue {
		t.Fatalf("CRD %s labels %v; want %s=%s and a version", crd.Name, crd.Labels, partOfLabel, partOfValue)
	}

	out := u.must("check")
	wantLines := []string{
		"► checking prerequisites",
		"✔ Kubernetes 1.37.2 >=1.33.0-0",
		"► checking version in cluster",
		"✔ distribution: flux-" + ver,
		"✔ bootstrapped: false",
		"► checking controllers",
	}
	for _, n := range names {
		wantLines = append(wantLines, "✔ "+n+": deployment ready")
	}
	wantLines = append(wantLines, "► checking crds", "✔ gitrepositories.source.toolkit.fluxcd.io/v1",
		"✔ helmreleases.helm.toolkit.fluxcd.io/v2", "✔ kustomizations.kustomize.toolkit.fluxcd.io/v1", "✔ all checks passed")
	inOrder(t, "eddy check", out, wantLines)
	if images := regexp.MustCompile(`(?m)^► \S+/(source|kustomize|helm|notification|application)-controller:\S+$`).FindAllString(out, -1); len(images) != 5 {
		t.Errorf("eddy check prints %d controller images (► <image>), want 5", len(images))
	}

	out = u.must("check", "--pre")
	inOrder(t, "eddy check --pre", out, []string{"► checking prerequisites", "✔ Kubernetes 1.37.2 >=1.33.0-0", "✔ prerequisites checks passed"})
	if strings.Contains(out, "checking controllers") {
		t.Error("eddy check --pre checks the controllers")
	}

	// flux version's shape: client, distribution, then each controller's tag.
	out = u.must("version")
	var got yaml.MapSlice
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, item := range got {
		keys = append(keys, item.Key.(string))
	}
	if strings.Join(keys, " ") != "eddy distribution application-controller helm-controller kustomize-controller notification-controller source-controller" {
		t.Errorf("eddy version keys %v; want eddy, distribution and the five controllers in that order", keys)
	}
	var js map[string]string
	if err := json.Unmarshal([]byte(u.must("version", "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	if js["distribution"] != "flux-"+ver || js["source-controller"] == "" || js["eddy"] == "" {
		t.Errorf("eddy version -o json: %v; want distribution flux-%s and each controller's tag", js, ver)
	}
	if out := u.must("version", "--client"); strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "eddy: ") {
		t.Errorf("eddy version --client: %q; want the one line eddy: <version>", out)
	}

	// No controllers in the namespace: flux's failure line, then "check failed".
	out = u.fails("check", "-n", "default")
	inOrder(t, "eddy check -n default", out, []string{
		"✗ no controllers found in the 'default' namespace with the label selector 'app.kubernetes.io/part-of=flux'",
		"► checking crds", "✗ check failed",
	})
	oneLineError(t, u.fails("version", "-n", "default"), "no deployments found in default namespace")
	oneLineError(t, u.fails("version", "-o", "xml"), "--output must be json or yaml")
}

// checkWithoutControllers: with the controllers' Deployments deleted, `eddy
// check` fails naming the missing controllers, and exits 1.
func checkWithoutControllers(t *testing.T, u *user) {
	t.Helper()
	c := u.client()
	if err := c.DeleteAllOf(context.Background(), &appsv1.Deployment{}, client.InNamespace(dev.Namespace),
		client.MatchingLabels{partOfLabel: partOfValue}); err != nil {
		t.Fatal(err)
	}
	out := u.fails("check")
	inOrder(t, "eddy check without the controllers' Deployments", out, []string{
		"✗ no controllers found in the 'flux-system' namespace with the label selector 'app.kubernetes.io/part-of=flux'",
		"✗ check failed",
	})
}

// inOrder checks that out holds each of want as a whole line, in order.
func inOrder(t *testing.T, what, out string, want []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			t.Errorf("%s: no line %q (after the ones before it); output:\n%s", what, w, out)
			return
		}
	}
}

// TestCheckVersionUnreachable: against a cluster that does not answer,
// `eddy check` says the API call failed and exits 1 after "✗ check
// failed"; `eddy version` fails in one line as flux version does, and
// `eddy version --client` still prints the client version.
func TestCheckVersionUnreachable(t *testing.T) {
	u := newUser(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := u.fails("check", "--kubeconfig", kc)
	inOrder(t, "eddy check on an unreachable cluster", out, []string{"► checking prerequisites", "✗ check failed"})
	if !regexp.MustCompile(`(?m)^✗ Kubernetes API call failed: .*127\.0\.0\.1:1.*connection refused`).MatchString(out) || strings.Contains(out, "checking controllers") {
		t.Errorf("eddy check on an unreachable cluster: want the API call's failure and no further section")
	}
	oneLineError(t, u.fails("version", "--kubeconfig", kc), "127.0.0.1:1")
	if out := u.must("version", "--client", "--kubeconfig", kc); !strings.HasPrefix(out, "eddy: ") {
		t.Errorf("eddy version --client: %q", out)
	}
	oneLineError(t, u.fails("check", "extra"), "unknown command")
	t.Logf("took %s", time.Since(start).Round(100*time.Millisecond))
}

// checkAtTerminal runs `eddy check` at a terminal with colours against a
// running eddy dev environment: in a namespace whose one controller
// Deployment cannot be scheduled, the spinner shows while check waits for
// it, then its failure and exit 1; in flux-system, all checks pass. Both
// leave a clean screen.
func checkAtTerminal(t *testing.T, u *user) {
	t.Helper()
	c := u.client()
	ctx := context.Background()
	ns := &corev1.Namespace{}
	ns.Name = "check-spin"
	labels := map[string]string{"app": "stuck"}
	dep := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"eddy.test/no-such-node": "true"},
				Containers:   []corev1.Container{{Name: "manager", Image: "example.com/stuck-controller:v1"}},
			},
		},
	}}
	dep.Namespace, dep.Name, dep.Labels = ns.Name, "stuck", map[string]string{partOfLabel: partOfValue}
	for _, o := range []client.Object{ns, dep} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	stuck := u.startTTY(80, false, "check", "-n", ns.Name, "--timeout", "5s", "--poll-interval", "1s")
	stuck.waitFor("waiting for stuck to be ready", time.Minute)
	screen := strings.Join(stuck.checkTerminalExit(time.Minute, false, 1), "\n")
	for _, want := range []string{"✗ stuck: deployment not ready", "► example.com/stuck-controller:v1", "✗ check failed"} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy check at a terminal, a Deployment not ready: the screen does not show %q", want)
		}
	}
	if err := c.Delete(ctx, ns); err != nil {
		t.Error(err)
	}

	screen = strings.Join(u.startTTY(80, false, "check").checkTerminal(time.Minute, false), "\n")
	for _, want := range []string{"✔ source-controller: deployment ready", "✔ all checks passed"} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy check at a terminal does not show %q", want)
		}
	}
}
