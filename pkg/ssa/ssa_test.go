package ssa_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

var env *testenv.Environment

// TestMain starts a local cluster, except for a fuzz run (-fuzz): its
// targets need none, and every fuzz worker process runs TestMain.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, &env)
}

// applier is the Manager's client: its scheme has the built-in kinds only,
// as a controller's may (kustomize-controller's lacks apiextensions.k8s.io),
// so the tests fail if the applier relies on its caller's scheme.
var applier client.Client

func manager() *ssa.Manager {
	if applier == nil {
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			panic(err)
		}
		c, err := client.New(env.Config, client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		applier = c
	}
	return &ssa.Manager{Client: applier, Owner: "kustomize-controller", StageTimeout: 30 * time.Second, Poll: 100 * time.Millisecond}
}

// apply applies set with the test's Manager and fails the test on an error.
func apply(t *testing.T, set []*unstructured.Unstructured, opts ssa.ApplyOptions) []ssa.Change {
	t.Helper()
	cs, err := manager().ApplyAll(context.Background(), set, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func objects(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ssa-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// deployment is the Deployment web in ns with replicas and containers
// (flow YAML maps, joined by ", ").
func deployment(ns string, replicas int, containers ...string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: %s}\n"+
		"spec: {replicas: %d, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [%s]}}}\n",
		ns, replicas, strings.Join(containers, ", "))
}

// crd is a namespaced CustomResourceDefinition, served and stored as v1,
// whose objects have an integer spec.size.
func crd(group, kind, plural string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[3]s.%[1]s}
spec:
  group: %[1]s
  names: {kind: %[2]s, plural: %[3]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`, group, kind, plural)
}

func configMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {FEATURE_X: %q}\n", name, ns, value)
}

func actions(cs []ssa.Change) map[string]ssa.Action {
	out := map[string]ssa.Action{}
	for _, c := range cs {
		out[c.Meta.String()] = c.Action
	}
	return out
}

func get(t *testing.T, kind, apiVersion, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestApplyWritesOnlyNewAndDriftedObjects(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := objects(t, configMap(ns, "payment-config", "true"), configMap(ns, "other", "1"))
	cs := apply(t, set, ssa.ApplyOptions{})
	if a := actions(cs); a["ConfigMap/"+ns+"/payment-config"] != ssa.Created || a["ConfigMap/"+ns+"/other"] != ssa.Created {
		t.Fatalf("first apply: %v", a)
	}
	rv := get(t, "ConfigMap", "v1", ns, "other").GetResourceVersion()

	// Another field manager edits the ConfigMap, as `kubectl edit` would.
	live := get(t, "ConfigMap", "v1", ns, "payment-config")
	unstructured.SetNestedField(live.Object, "false", "data", "FEATURE_X")
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}

	cs = apply(t, set, ssa.ApplyOptions{})
	a := actions(cs)
	if a["ConfigMap/"+ns+"/payment-config"] != ssa.Configured || a["ConfigMap/"+ns+"/other"] != ssa.Unchanged {
		t.Fatalf("second apply: %v", a)
	}
	if got := get(t, "ConfigMap", "v1", ns, "other").GetResourceVersion(); got != rv {
		t.Errorf("an unchanged object was written: resourceVersion %s → %s", rv, got)
	}
	if v, _, _ := unstructured.NestedString(get(t, "ConfigMap", "v1", ns, "payment-config").Object, "data", "FEATURE_X"); v != "true" {
		t.Errorf("drift not corrected: FEATURE_X = %q", v)
	}
	var drift []string
	for _, c := range cs {
		for _, d := range c.Drift {
			drift = append(drift, d.String())
		}
	}
	if len(drift) != 1 || drift[0] != `.data.FEATURE_X "true" → "false" (by kubectl-edit)` {
		t.Errorf("drift %q, want the field, the values and the manager", drift)
	}
}

func TestSecretDriftIsMasked(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := objects(t, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: %s}\nstringData: {password: hunter2}\n", ns))
	apply(t, set, ssa.ApplyOptions{})
	live := get(t, "Secret", "v1", ns, "creds")
	unstructured.SetNestedField(live.Object, "Y2hhbmdlZA==", "data", "password")
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	cs := apply(t, set, ssa.ApplyOptions{})
	for _, c := range cs {
		for _, d := range c.Drift {
			if strings.Contains(d.String(), "Y2hh") || strings.Contains(d.String(), "aHVudGVy") || !strings.Contains(d.String(), "***") {
				t.Errorf("secret drift not masked: %s", d)
			}
		}
	}
}

func TestInvalidObjectMeansNothingApplied(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	var docs []string
	for i := range 19 {
		docs = append(docs, configMap(ns, fmt.Sprintf("cm-%02d", i), "v"))
	}
	docs = append(docs, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: broken, namespace: %s}\nspec: {replicas: 1, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c, image: nginx}]}}}\n", ns))
	_, err := manager().ApplyAll(ctx, objects(t, docs...), ssa.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "Deployment/"+ns+"/broken dry-run failed") || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("got %v; want a dry-run error naming Deployment/%s/broken and the reason", err, ns)
	}
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "cm-") {
			t.Fatalf("ConfigMap %s was applied although the set had an invalid object", cm.Name)
		}
	}
}

func TestCRDAndCustomResourceInOneSet(t *testing.T) {
	ns := "ssa-new-ns"
	set := objects(t, crd("example.com", "Widget", "widgets"), "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: "+ns+"}\nspec: {size: 3}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n",
		configMap(ns, "in-new-namespace", "1"))
	cs := apply(t, set, ssa.ApplyOptions{})
	a := actions(cs)
	for _, id := range []string{"CustomResourceDefinition/widgets.example.com", "Namespace/" + ns, "Widget/" + ns + "/w", "ConfigMap/" + ns + "/in-new-namespace"} {
		if a[id] != ssa.Created {
			t.Errorf("%s: %s, want created (all: %v)", id, a[id], a)
		}
	}
	if cs[0].Meta.GroupKind.Kind != "CustomResourceDefinition" {
		t.Errorf("the CRD was not applied first: %v", cs)
	}
	// Applied again, the installed CRD is unchanged and still waited for.
	cs = apply(t, set, ssa.ApplyOptions{})
	if a := actions(cs); a["CustomResourceDefinition/widgets.example.com"] != ssa.Unchanged || a["Widget/"+ns+"/w"] != ssa.Unchanged {
		t.Errorf("re-applied: %v, want the CRD and the Widget unchanged", a)
	}
}

func TestImmutableFieldNeedsForce(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	job := func(image string) string {
		return fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, namespace: %s}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: %q}]}}}\n", ns, image)
	}
	apply(t, objects(t, job("migrate:1")), ssa.ApplyOptions{})
	uid := get(t, "Job", "batch/v1", ns, "migrate").GetUID()
	_, err := manager().ApplyAll(ctx, objects(t, job("migrate:2")), ssa.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "Job/"+ns+"/migrate dry-run failed") || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("without force: got %v, want an immutable-field error naming the Job", err)
	}
	cs := apply(t, objects(t, job("migrate:2")), ssa.ApplyOptions{Force: true})
	if a := actions(cs)["Job/"+ns+"/migrate"]; a != ssa.Created {
		t.Errorf("with force: %s, want created (recreated)", a)
	}
	if got := get(t, "Job", "batch/v1", ns, "migrate"); got.GetUID() == uid {
		t.Error("the Job was not recreated")
	}
}

func TestPruneOnlyOwnedObjects(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	owner := map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	mk := func(name string, labels map[string]string, annotations map[string]string) *unstructured.Unstructured {
		u := objects(t, configMap(ns, name, "1"))[0]
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	foreign := map[string]string{"kustomize.toolkit.fluxcd.io/name": "other", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}
	set := []*unstructured.Unstructured{
		mk("owned", owner, nil), mk("kept", owner, map[string]string{ssa.PruneAnnotation: "disabled"}), mk("foreign", foreign, nil),
	}
	cs := apply(t, set, ssa.ApplyOptions{})
	deleted, failed, err := manager().DeleteStale(ctx, cs, ssa.PruneOptions{OwnerLabels: owner})
	if err != nil || len(failed) != 0 {
		t.Fatal(err, failed)
	}
	a := actions(deleted)
	if a["ConfigMap/"+ns+"/owned"] != ssa.Deleted || a["ConfigMap/"+ns+"/kept"] != ssa.Skipped || a["ConfigMap/"+ns+"/foreign"] != ssa.Skipped {
		t.Errorf("prune actions %v", a)
	}
	for name, wantGone := range map[string]bool{"owned": true, "kept": false, "foreign": false} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if gone := apierrors.IsNotFound(err); gone != wantGone {
			t.Errorf("%s: gone=%v, want %v", name, gone, wantGone)
		}
	}
}

func TestSkipAnnotations(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := objects(t, configMap(ns, "once", "1"), configMap(ns, "never", "1"))
	set[0].SetAnnotations(map[string]string{ssa.SSAAnnotation: "IfNotPresent"})
	set[1].SetLabels(map[string]string{ssa.ReconcileAnnotation: "disabled"})
	apply(t, set, ssa.ApplyOptions{})
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "never"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("reconcile: disabled object was applied (%v)", err)
	}
	unstructured.SetNestedField(set[0].Object, "2", "data", "FEATURE_X")
	cs := apply(t, set, ssa.ApplyOptions{})
	if a := actions(cs)["ConfigMap/"+ns+"/once"]; a != ssa.Skipped {
		t.Errorf("ssa: IfNotPresent on an existing object: %s, want skipped", a)
	}
}

// Fields first set with kubectl are handed to the applier, so removing them
// from the desired object removes them from the cluster; `ssa: Merge`
// keeps them. Flux compatible managed-fields cleanup.
func TestManagedFieldsCleanup(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	for _, name := range []string{"adopted", "merged"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
			Data: map[string]string{"FEATURE_X": "1", "LEGACY": "yes"}}
		if name == "merged" {
			cm.Annotations[ssa.SSAAnnotation] = "Merge"
		}
		if err := env.Client.Create(ctx, cm, client.FieldOwner("kubectl")); err != nil {
			t.Fatal(err)
		}
	}
	set := objects(t, configMap(ns, "adopted", "1"), configMap(ns, "merged", "1"))
	set[1].SetAnnotations(map[string]string{ssa.SSAAnnotation: "Merge"})
	cs := apply(t, set, ssa.ApplyOptions{})
	if a := actions(cs); a["ConfigMap/"+ns+"/adopted"] != ssa.Configured || a["ConfigMap/"+ns+"/merged"] != ssa.Unchanged {
		t.Errorf("actions = %v, want adopted configured (cleanup) and merged unchanged", a)
	}
	adopted := get(t, "ConfigMap", "v1", ns, "adopted")
	for _, e := range adopted.GetManagedFields() {
		if e.Manager == "kubectl" {
			t.Errorf("kubectl still manages fields of the adopted object: %+v", e)
		}
	}
	if _, ok := adopted.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("last-applied-configuration kept")
	}
	if _, ok, _ := unstructured.NestedString(adopted.Object, "data", "LEGACY"); ok {
		t.Error("a field set by kubectl and absent from the desired object was kept after cleanup")
	}
	merged := get(t, "ConfigMap", "v1", ns, "merged")
	if v, _, _ := unstructured.NestedString(merged.Object, "data", "LEGACY"); v != "yes" {
		t.Errorf("ssa: Merge object lost the kubectl field: %v", merged.Object["data"])
	}
	// The cleanup happens once: the next apply changes nothing.
	cs = apply(t, set, ssa.ApplyOptions{})
	if a := actions(cs)["ConfigMap/"+ns+"/adopted"]; a != ssa.Unchanged {
		t.Errorf("second apply: %s, want unchanged", a)
	}
}

// Ignored fields do not count as drift, and a value another server-side
// applier set stays theirs; without the rule the same change is corrected.
func TestIgnoreRules(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := objects(t, configMap(ns, "tuned", "1"), configMap(ns, "plain", "1"))
	apply(t, set, ssa.ApplyOptions{})
	for _, name := range []string{"tuned", "plain"} {
		other := objects(t, configMap(ns, name, "9"))[0]
		if err := env.Client.Patch(ctx, other, client.Apply, client.FieldOwner("autotuner"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	rules := []ssa.IgnoreRule{{Paths: []string{"/data/FEATURE_X"}, Match: func(u *unstructured.Unstructured) bool { return u.GetName() == "tuned" }}}
	cs := apply(t, set, ssa.ApplyOptions{Ignore: rules})
	if a := actions(cs); a["ConfigMap/"+ns+"/tuned"] != ssa.Unchanged || a["ConfigMap/"+ns+"/plain"] != ssa.Configured {
		t.Errorf("actions %v: want the ignored field not to count as drift", a)
	}
	if v, _, _ := unstructured.NestedString(get(t, "ConfigMap", "v1", ns, "tuned").Object, "data", "FEATURE_X"); v != "9" {
		t.Errorf("ignored field = %q, want the other applier's 9", v)
	}
	if v, _, _ := unstructured.NestedString(get(t, "ConfigMap", "v1", ns, "plain").Object, "data", "FEATURE_X"); v != "1" {
		t.Errorf("not ignored field = %q, want corrected to 1", v)
	}
	// A change elsewhere in the ignored object is applied without taking
	// the ignored field back.
	unstructured.SetNestedField(set[0].Object, "new", "data", "OTHER")
	apply(t, set, ssa.ApplyOptions{Ignore: rules})
	data, _, _ := unstructured.NestedStringMap(get(t, "ConfigMap", "v1", ns, "tuned").Object, "data")
	if data["FEATURE_X"] != "9" || data["OTHER"] != "new" {
		t.Errorf("after a change beside the ignored field: %v", data)
	}
}

// Fields another applier holds under an ignore rule stay theirs when a
// change beside them is applied: a map key that reads as a number is a key,
// not a list position; an ignored list item is left out of the applied
// object, not applied as null.
func TestIgnoredFieldsOfAnotherApplier(t *testing.T) {
	ns := namespace(t)
	cm := func(data string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: numbered, namespace: %s}\ndata: %s\n", ns, data)
	}
	web := func(image string) string { return "{name: web, image: " + image + "}" }
	sidecar := func(image string) string { return "{name: sidecar, image: " + image + "}" }
	for _, tc := range []struct {
		name, path              string
		first, other, then, out string // the applier's first and second apply, the other's, the live result
		kind, apiVersion, field string
	}{
		{name: "numeric map key", path: "/data/0", kind: "ConfigMap", apiVersion: "v1", field: "data",
			first: cm(`{"0": "1"}`), other: cm(`{"0": "9"}`), then: cm(`{"0": "1", OTHER: new}`), out: `{"0":"9","OTHER":"new"}`},
		{name: "list item", path: "/spec/template/spec/containers/1", kind: "Deployment", apiVersion: "apps/v1", field: "spec",
			first: deployment(ns, 1, web("nginx:1"), sidecar("proxy:1")), other: deployment(ns, 1, sidecar("proxy:2")),
			then: deployment(ns, 1, web("nginx:2"), sidecar("proxy:1")), out: `[{"image":"proxy:2","name":"sidecar"},{"image":"nginx:2","name":"web"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apply(t, objects(t, tc.first), ssa.ApplyOptions{})
			if err := env.Client.Patch(context.Background(), objects(t, tc.other)[0], client.Apply, client.FieldOwner("other"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			live := objects(t, tc.then)[0]
			apply(t, []*unstructured.Unstructured{live}, ssa.ApplyOptions{Ignore: []ssa.IgnoreRule{{Paths: []string{tc.path}}}})
			got := get(t, tc.kind, tc.apiVersion, ns, live.GetName()).Object[tc.field]
			if tc.kind == "Deployment" {
				got, _, _ = unstructured.NestedFieldNoCopy(got.(map[string]any), "template", "spec", "containers")
				slices.SortFunc(got.([]any), func(a, b any) int {
					return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
				})
				for _, c := range got.([]any) {
					c := c.(map[string]any)
					for k := range c {
						if k != "name" && k != "image" {
							delete(c, k) // defaults
						}
					}
				}
			}
			if b, _ := json.Marshal(got); string(b) != tc.out {
				t.Errorf("%s %s, want %s", tc.field, b, tc.out)
			}
		})
	}
}

// A namespaced object without a namespace is refused by name before any
// write, as Flux does; no default namespace is guessed.
func TestNamespaceNotSpecified(t *testing.T) {
	set := objects(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: homeless}\n")
	_, err := manager().ApplyAll(context.Background(), set, ssa.ApplyOptions{})
	if err == nil || err.Error() != "ConfigMap/homeless namespace not specified" {
		t.Errorf("error %v, want ConfigMap/homeless namespace not specified", err)
	}
}
