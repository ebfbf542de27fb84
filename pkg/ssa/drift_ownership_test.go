package ssa_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/ssa"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An object annotated `reconcile: disabled` in the cluster is skipped even
// though Git does not say so: the way to pause one object in an incident.
func TestLiveReconcileDisabledIsSkipped(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	apply(t, objects(t, configMap(ns, "paused", "1")), ssa.ApplyOptions{})
	live := get(t, "ConfigMap", "v1", ns, "paused")
	live.SetAnnotations(map[string]string{ssa.ReconcileAnnotation: "disabled"})
	unstructured.SetNestedField(live.Object, "hotfix", "data", "FEATURE_X")
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	cs := apply(t, objects(t, configMap(ns, "paused", "1")), ssa.ApplyOptions{})
	if a := actions(cs)["ConfigMap/"+ns+"/paused"]; a != ssa.Skipped {
		t.Errorf("action %s, want skipped", a)
	}
	if v, _, _ := unstructured.NestedString(get(t, "ConfigMap", "v1", ns, "paused").Object, "data", "FEATURE_X"); v != "hotfix" {
		t.Errorf("paused object reverted: FEATURE_X=%q", v)
	}
}

// A key removed from a Secret's stringData in Git leaves the Secret.
func TestSecretStringDataKeyRemoval(t *testing.T) {
	ns := namespace(t)
	sec := func(sd string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: %s}\nstringData: %s\n", ns, sd)
	}
	apply(t, objects(t, sec(`{a: "1", b: "2"}`)), ssa.ApplyOptions{})
	apply(t, objects(t, sec(`{a: "1"}`)), ssa.ApplyOptions{})
	data, _, _ := unstructured.NestedStringMap(get(t, "Secret", "v1", ns, "s").Object, "data")
	if _, ok := data["b"]; ok || data["a"] != "MQ==" {
		t.Errorf("data after removing key b: %v", data)
	}
	cs := apply(t, objects(t, sec(`{a: "1"}`)), ssa.ApplyOptions{})
	if a := actions(cs)["Secret/"+ns+"/s"]; a != ssa.Unchanged {
		t.Errorf("same stringData again: %s, want unchanged", a)
	}
}

// An ignored /spec/replicas that an autoscaler sets through the scale
// subresource survives a change elsewhere in the Deployment.
func TestIgnoredReplicasSetThroughScale(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	dep := func(image string) string {
		return deployment(ns, 2, "{name: web, image: "+image+"}")
	}
	rules := []ssa.IgnoreRule{{Paths: []string{"/spec/replicas"}}}
	apply(t, objects(t, dep("nginx:1")), ssa.ApplyOptions{Ignore: rules})
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatal(err)
	}
	for _, image := range []string{"nginx:1", "nginx:2"} {
		cs := apply(t, objects(t, dep(image)), ssa.ApplyOptions{Ignore: rules})
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 5 || d.Spec.Template.Spec.Containers[0].Image != image {
			t.Errorf("%s (%v): replicas %d image %s, want the autoscaler's 5 and %s", image, actions(cs), *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, image)
		}
	}
}

// Keys added with kubectl edit, patch or client-side apply are handed to
// the applier by the cleanup and so removed, as Flux does.
func TestKubectlManagersAreCleanedUp(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	for _, mgr := range []string{"kubectl-edit", "kubectl-client-side-apply", "kubectl-patch"} {
		name := "cm-" + strings.TrimPrefix(mgr, "kubectl-")
		apply(t, objects(t, configMap(ns, name, "1")), ssa.ApplyOptions{})
		live := get(t, "ConfigMap", "v1", ns, name)
		unstructured.SetNestedField(live.Object, "true", "data", "DEBUG")
		if err := env.Client.Update(ctx, live, client.FieldOwner(mgr)); err != nil {
			t.Fatal(err)
		}
		apply(t, objects(t, configMap(ns, name, "1")), ssa.ApplyOptions{})
		if data, _, _ := unstructured.NestedStringMap(get(t, "ConfigMap", "v1", ns, name).Object, "data"); data["DEBUG"] != "" {
			t.Errorf("%s: key added by %s kept: %v", name, mgr, data)
		}
	}
}

// With KeepManagers (Argo CD's three-way apply), keys and labels added by
// kubectl stay through an apply, while a Git-declared value kubectl
// changed is restored and a key the applier's own client-side apply
// (Update) had set, no longer in Git, is removed.
func TestKeepManagersKeepsWhatKubectlAdded(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	keep := *manager()
	keep.KeepManagers = true
	cm := configMap(ns, "cm", "1")
	if _, err := keep.ApplyAll(ctx, objects(t, cm), ssa.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	own := get(t, "ConfigMap", "v1", ns, "cm")
	unstructured.SetNestedField(own.Object, "old", "data", "FROM_OLD_GIT")
	if err := env.Client.Update(ctx, own, client.FieldOwner(keep.Owner)); err != nil {
		t.Fatal(err)
	}
	for _, mgr := range []string{"kubectl-edit", "kubectl-label"} {
		live := get(t, "ConfigMap", "v1", ns, "cm")
		unstructured.SetNestedField(live.Object, "true", "data", "ADDED_BY_"+mgr)
		unstructured.SetNestedField(live.Object, "me", "metadata", "labels", mgr)
		if mgr == "kubectl-edit" {
			unstructured.SetNestedField(live.Object, "2", "data", "FEATURE_X")
		}
		if err := env.Client.Update(ctx, live, client.FieldOwner(mgr)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := keep.ApplyAll(ctx, objects(t, cm), ssa.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	got := get(t, "ConfigMap", "v1", ns, "cm")
	data, _, _ := unstructured.NestedStringMap(got.Object, "data")
	if data["FEATURE_X"] != "1" || data["ADDED_BY_kubectl-edit"] != "true" || data["ADDED_BY_kubectl-label"] != "true" || data["FROM_OLD_GIT"] != "" {
		t.Errorf("data %v, want FEATURE_X restored to 1, the added keys kept and FROM_OLD_GIT removed", data)
	}
	if l := got.GetLabels(); l["kubectl-edit"] != "me" || l["kubectl-label"] != "me" {
		t.Errorf("labels %v, want both added labels kept", l)
	}
}

// A value changed in Git is configured, not reported as drift; a value
// changed by another manager is drift naming that manager.
func TestGitChangeIsNotDrift(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	apply(t, objects(t, configMap(ns, "cfg", "1")), ssa.ApplyOptions{})
	cs := apply(t, objects(t, configMap(ns, "cfg", "2")), ssa.ApplyOptions{})
	if len(cs) != 1 || cs[0].Action != ssa.Configured || len(cs[0].Drift) != 0 {
		t.Errorf("Git change: %+v, want configured without drift", cs)
	}
	live := get(t, "ConfigMap", "v1", ns, "cfg")
	unstructured.SetNestedField(live.Object, "3", "data", "FEATURE_X")
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	cs = apply(t, objects(t, configMap(ns, "cfg", "2")), ssa.ApplyOptions{})
	if len(cs) != 1 || len(cs[0].Drift) != 1 || cs[0].Drift[0].String() != `.data.FEATURE_X "2" → "3" (by kubectl-edit)` {
		t.Errorf("edit by kubectl-edit: %+v", cs)
	}
}

// With its CRD already served and unchanged, an invalid custom resource
// stops the set before the first stage writes anything.
func TestInvalidCustomResourceOfServedCRD(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	crd := crd("review.example.com", "Sprocket", "sprockets")
	role := func(verb string) string {
		return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: review-sprocket-" + ns + "}\nrules: [{apiGroups: [review.example.com], resources: [sprockets], verbs: [" + verb + "]}]\n"
	}
	sprocket := func(size string) string {
		return fmt.Sprintf("apiVersion: review.example.com/v1\nkind: Sprocket\nmetadata: {name: s, namespace: %s}\nspec: {size: %s}\n", ns, size)
	}
	apply(t, objects(t, crd, role("get"), sprocket("1")), ssa.ApplyOptions{})
	_, err := manager().ApplyAll(ctx, objects(t, crd, role("delete"), sprocket("not-a-number")), ssa.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "Sprocket/"+ns+"/s dry-run failed") {
		t.Errorf("error %v, want the Sprocket named", err)
	}
	if got := get(t, "ClusterRole", "rbac.authorization.k8s.io/v1", "", "review-sprocket-"+ns); strings.Contains(fmt.Sprint(got.Object["rules"]), "delete") {
		t.Error("the ClusterRole was written although the set holds an invalid object")
	}
}

// Each drifted container field names the manager that changed that
// container, even when another manager edited a sibling item later.
func TestDriftNamesTheManagerOfEachListItem(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	doc := deployment(ns, 1, "{name: a, image: nginx:1}", "{name: b, image: redis:1}")
	apply(t, objects(t, doc), ssa.ApplyOptions{})
	for i, who := range []string{"alice-edit", "bob-edit"} {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // managedFields times have one-second resolution
		}
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[i].Image += "-" + who
		if err := env.Client.Update(ctx, d, client.FieldOwner(who)); err != nil {
			t.Fatal(err)
		}
	}
	cs := apply(t, objects(t, doc), ssa.ApplyOptions{})
	var got []string
	for _, d := range cs[0].Drift {
		got = append(got, d.String())
	}
	want := []string{
		`.spec.template.spec.containers[0].image "nginx:1" → "nginx:1-alice-edit" (by alice-edit)`,
		`.spec.template.spec.containers[1].image "redis:1" → "redis:1-bob-edit" (by bob-edit)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("drift:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
