package drift

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const release = "podinfo"

// manifest is a release manifest as Helm stores it: no namespace on the
// namespaced objects, no Helm metadata.
func manifest(clusterRole string) string {
	return `---
# Source: chart/templates/cfg.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  a: "1"
  b: "keep"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gone
data:
  x: "y"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: optout
  labels:
    helm.toolkit.fluxcd.io/driftDetection: disabled
data:
  x: "y"
---
apiVersion: v1
kind: Secret
metadata:
  name: sec
stringData:
  password: hunter2
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ` + clusterRole + `
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
`
}

// install creates the release's objects the way Helm v3 does: with the
// Helm metadata, namespaced ones in the release namespace, field manager
// helm.
func install(t *testing.T, ns, m string) {
	t.Helper()
	objs, err := readObjects(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		setHelmMetadata(u, release, ns)
		if u.GetKind() != "ClusterRole" {
			u.SetNamespace(ns)
		}
		if err := env.Client.Create(context.Background(), u, client.FieldOwner("helm")); err != nil {
			t.Fatal(err)
		}
	}
}

// edit changes an object as `kubectl edit` does: an update by another
// field manager.
func edit(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	change()
	if err := env.Client.Update(ctx, obj, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
}

func detect(t *testing.T, ns, m string, dd helmv2.DriftDetection) *Report {
	t.Helper()
	r, err := Detect(context.Background(), env.Client, m, release, ns, dd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDetectAndCorrect(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "drift")
	role := "drift-" + ns
	m := manifest(role)
	install(t, ns, m)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
	})

	// In sync: only the opted-out object is listed, and it is no drift.
	r := detect(t, ns, m, helmv2.DriftDetection{})
	if r.Drifted() || r.Summary() != "ConfigMap/"+ns+"/optout excluded" {
		t.Fatalf("fresh install: drifted=%v summary:\n%s", r.Drifted(), r.Summary())
	}

	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}}
	edit(t, cfg, func() { cfg.Data["a"] = "2"; cfg.Data["extra"] = "mine" })
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: ns}}
	edit(t, sec, func() { sec.Data["password"] = []byte("letmein") })
	optout := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "optout", Namespace: ns}}
	edit(t, optout, func() { optout.Data["x"] = "changed" })
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}

	// A key the release does not set (extra) is another manager's field:
	// the apply dry-run keeps it, so it is no drift (as in Flux).
	r = detect(t, ns, m, helmv2.DriftDetection{})
	want := strings.Join([]string{
		fmt.Sprintf(`ConfigMap/%s/cfg changed (0 additions, 1 changes, 0 removals): .data.a "1" → "2" (by kubectl-edit)`, ns),
		fmt.Sprintf("ConfigMap/%s/gone removed", ns),
		fmt.Sprintf("ConfigMap/%s/optout excluded", ns),
		fmt.Sprintf(`Secret/%s/sec changed (0 additions, 1 changes, 0 removals): .data.password "***" → "***" (by kubectl-edit)`, ns),
	}, "\n")
	if !r.Drifted() || r.Summary() != want {
		t.Fatalf("drifted=%v summary:\n%s\nwant:\n%s", r.Drifted(), r.Summary(), want)
	}
	if s := r.Summary(); strings.Contains(s, "hunter2") || strings.Contains(s, "letmein") {
		t.Fatalf("summary shows Secret data: %s", s)
	}

	// An ignore rule for the edited fields of cfg (and one that targets
	// nothing) hides them; the other drift stays.
	ignoring := detect(t, ns, m, helmv2.DriftDetection{Ignore: []helmv2.IgnoreRule{
		{Paths: []string{"/data/a"}, Target: &kustomizev1.Selector{Kind: "ConfigMap", Name: "c.g"}},
		{Paths: []string{"/data/password"}, Target: &kustomizev1.Selector{Kind: "Secret", Name: "other"}},
	}})
	for _, o := range ignoring.Objects {
		if o.Meta.Name == "cfg" {
			t.Fatalf("ignored fields reported: %s", ignoring.Summary())
		}
	}
	if len(ignoring.Objects) != 3 {
		t.Fatalf("with ignore rules:\n%s", ignoring.Summary())
	}
	// The root pointer excludes the object.
	root := detect(t, ns, m, helmv2.DriftDetection{Ignore: []helmv2.IgnoreRule{{Paths: []string{""}, Target: &kustomizev1.Selector{Kind: "Secret"}}}})
	if !strings.Contains(root.Summary(), "Secret/"+ns+"/sec excluded") {
		t.Fatalf("root pointer:\n%s", root.Summary())
	}

	// Correct restores the edited fields and the deleted object and leaves
	// the opted-out object as it is.
	changeSet, err := Correct(ctx, env.Client, r)
	if err != nil {
		t.Fatal(err)
	}
	wantSet := fmt.Sprintf("ConfigMap/%[1]s/gone created\nConfigMap/%[1]s/cfg configured\nSecret/%[1]s/sec configured", ns)
	if changeSet != wantSet {
		t.Fatalf("change set:\n%s\nwant:\n%s", changeSet, wantSet)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Data["a"] != "1" || cfg.Data["b"] != "keep" || cfg.Data["extra"] != "mine" {
		t.Errorf("cfg data after correction: %v", cfg.Data)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sec), sec); err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != "hunter2" {
		t.Errorf("secret not restored")
	}
	gone := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gone"}, gone); err != nil {
		t.Fatal(err)
	}
	if gone.Labels[managedByLabel] != "Helm" || gone.Annotations[releaseNameAnnotation] != release || gone.Annotations[releaseNamespaceAnnotation] != ns {
		t.Errorf("created object lacks Helm metadata: %v %v", gone.Labels, gone.Annotations)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(optout), optout); err != nil {
		t.Fatal(err)
	}
	if optout.Data["x"] != "changed" {
		t.Errorf("opted-out object corrected")
	}
	if r := detect(t, ns, m, helmv2.DriftDetection{}); r.Drifted() {
		t.Fatalf("after correction:\n%s", r.Summary())
	}
}

// An object opted out in the cluster (kubectl label) is not compared.
func TestDetectOptOutInCluster(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "drift")
	m := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n"
	install(t, ns, m)
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}}
	edit(t, cfg, func() { cfg.Data["a"] = "2" })
	if r := detect(t, ns, m, helmv2.DriftDetection{}); !r.Drifted() {
		t.Fatal("edit not detected")
	}
	edit(t, cfg, func() { cfg.Annotations[DisabledKey] = DisabledValue })
	r := detect(t, ns, m, helmv2.DriftDetection{})
	if r.Drifted() || r.Summary() != "ConfigMap/"+ns+"/cfg excluded" {
		t.Fatalf("opted out in the cluster:\n%s", r.Summary())
	}
}

// A kind the API server does not serve fails that object only; a bad
// ignore target and an unreadable manifest fail the whole detection.
func TestDetectErrors(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "drift")
	m := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n"
	r, err := Detect(context.Background(), env.Client, m, release, ns, helmv2.DriftDetection{})
	if err == nil || !strings.Contains(err.Error(), "failed to determine if Widget is namespace scoped") {
		t.Fatalf("err = %v", err)
	}
	if r == nil || r.Summary() != "ConfigMap/"+ns+"/cfg removed" {
		t.Fatalf("report = %+v", r)
	}
	_, err = Detect(context.Background(), env.Client, m, release, ns, helmv2.DriftDetection{Ignore: []helmv2.IgnoreRule{{Paths: []string{"/a"}, Target: &kustomizev1.Selector{Name: "(("}}}})
	if err == nil || err.Error() != `driftDetection.ignore[0].target: name: invalid regular expression "(("` {
		t.Fatalf("err = %v", err)
	}
	if _, err := Detect(context.Background(), env.Client, "kind: [", release, ns, helmv2.DriftDetection{}); err == nil ||
		!strings.HasPrefix(err.Error(), "failed to read objects from release manifest: ") {
		t.Fatalf("err = %v", err)
	}
}

// A failed correction names the object; what succeeded is still listed.
func TestCorrectPartial(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "drift")
	m := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: v\n"
	r := detect(t, ns, m, helmv2.DriftDetection{})
	if len(r.Objects) != 2 {
		t.Fatalf("report:\n%s", r.Summary())
	}
	// b appears before the correction runs: its creation fails.
	b := &unstructured.Unstructured{}
	b.SetAPIVersion("v1")
	b.SetKind("ConfigMap")
	b.SetName("b")
	b.SetNamespace(ns)
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	changeSet, err := Correct(ctx, env.Client, r)
	if changeSet != "ConfigMap/"+ns+"/a created" {
		t.Errorf("change set = %q", changeSet)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "ConfigMap/"+ns+"/b creation failure: ") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("err = %v", err)
	}
}

// A Deployment scaled and re-imaged by hand: both fields are reported with
// their paths; an ignore rule on /spec/replicas (an autoscaler's field)
// hides the scale, and the correction restores the image only.
func TestDetectDeploymentIgnoreReplicas(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "drift")
	m := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 1
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
      - name: podinfod
        image: ghcr.io/stefanprodan/podinfo:6.14.1
`
	install(t, ns, m)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns}}
	edit(t, dep, func() {
		dep.Spec.Replicas = ptr.To(int32(3))
		dep.Spec.Template.Spec.Containers[0].Image = "ghcr.io/stefanprodan/podinfo:6.0.0"
	})

	r := detect(t, ns, m, helmv2.DriftDetection{})
	want := fmt.Sprintf(`Deployment/%s/podinfo changed (0 additions, 2 changes, 0 removals): .spec.replicas 1 → 3 (by kubectl-edit), `+
		`.spec.template.spec.containers[0].image "ghcr.io/stefanprodan/podinfo:6.14.1" → "ghcr.io/stefanprodan/podinfo:6.0.0" (by kubectl-edit)`, ns)
	if r.Summary() != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", r.Summary(), want)
	}

	dd := helmv2.DriftDetection{Ignore: []helmv2.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment"}}}}
	r = detect(t, ns, m, dd)
	if s := r.Summary(); strings.Contains(s, "replicas") || !strings.Contains(s, "containers[0].image") {
		t.Fatalf("with /spec/replicas ignored:\n%s", s)
	}
	if _, err := Correct(ctx, env.Client, r); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 || dep.Spec.Template.Spec.Containers[0].Image != "ghcr.io/stefanprodan/podinfo:6.14.1" {
		t.Fatalf("after correction: replicas %d, image %s", *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image)
	}
	if r := detect(t, ns, m, dd); r.Drifted() {
		t.Fatalf("after correction:\n%s", r.Summary())
	}
}
