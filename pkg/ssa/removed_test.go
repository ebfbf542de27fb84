package ssa_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func dbService(ns, spec string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: db, namespace: %s}\nspec: {%sselector: {app: db}, ports: [{port: 5432}]}\n", ns, spec)
}

func liveService(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// Removing `clusterIP: None` from a Service leaves the API server keeping
// the value (the dry-run shows no difference): without force the set fails
// naming the object and the field, and nothing is written; with force the
// Service is recreated and reported replaced.
func TestRemovedFieldKeptByServerNeedsForce(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"spec.force", "annotation"} {
		t.Run(how, func(t *testing.T) {
			ns := namespace(t)
			apply(t, objects(t, dbService(ns, "clusterIP: None, ")), ssa.ApplyOptions{})
			before := liveService(t, ns, "db")
			if before.Spec.ClusterIP != "None" {
				t.Fatalf("clusterIP %q, want None", before.Spec.ClusterIP)
			}
			_, err := manager().ApplyAll(ctx, objects(t, dbService(ns, "")), ssa.ApplyOptions{})
			id := "Service/" + ns + "/db"
			if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), ".spec.clusterIP") || !strings.Contains(err.Error(), "force") {
				t.Fatalf("without force: error %v, want one naming %s, .spec.clusterIP and force", err, id)
			}
			if got := liveService(t, ns, "db"); got.ResourceVersion != before.ResourceVersion {
				t.Errorf("without force the Service was written (resourceVersion %s → %s)", before.ResourceVersion, got.ResourceVersion)
			}
			// The same failure again: the ownership of the field was not lost.
			if _, err2 := manager().ApplyAll(ctx, objects(t, dbService(ns, "")), ssa.ApplyOptions{}); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second reconcile without force: %v, want the same error %q", err2, err)
			}

			set, opts := objects(t, dbService(ns, "")), ssa.ApplyOptions{Force: true}
			if how == "annotation" {
				set[0].SetAnnotations(map[string]string{ssa.ForceAnnotation: "enabled"})
				opts.Force = false
			}
			cs := apply(t, set, opts)
			if len(cs) != 1 || cs[0].String() != id+" replaced" {
				t.Errorf("with force: %v, want %s replaced", cs, id)
			}
			after := liveService(t, ns, "db")
			if after.UID == before.UID || after.Spec.ClusterIP == "None" || after.Spec.ClusterIP == "" {
				t.Errorf("with force: uid %s → %s, clusterIP %q; want a recreated Service with a cluster IP", before.UID, after.UID, after.Spec.ClusterIP)
			}
			cs, err = manager().ApplyAll(ctx, set, opts)
			if err != nil || actions(cs)[id] != ssa.Unchanged {
				t.Errorf("after the replace: %v %v, want unchanged", cs, err)
			}
		})
	}
}

// Removed fields whose kept value is what the API server gives a new object
// anyway (a default, or another allocation from the same pool) are not
// flagged: the Service is configured in place, once.
func TestRemovedFieldWithServerDefaultIsNotFlagged(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	for name, spec := range map[string]string{
		"typed":  "type: ClusterIP, sessionAffinity: None, ",
		"pinned": "clusterIP: 10.96.201.30, ",
		"ports":  "type: NodePort, ",
	} {
		doc := strings.Replace(dbService(ns, spec), "name: db", "name: "+name, 1)
		if name == "ports" {
			doc = strings.Replace(doc, "{port: 5432}", "{port: 5432, nodePort: 30432}", 1)
		}
		if _, err := manager().ApplyAll(ctx, objects(t, doc), ssa.ApplyOptions{}); err != nil {
			t.Fatal(name, err)
		}
	}
	before := map[string]*corev1.Service{}
	var set []*unstructured.Unstructured
	for _, name := range []string{"typed", "pinned", "ports"} {
		before[name] = liveService(t, ns, name)
		spec := ""
		if name == "ports" {
			spec = "type: NodePort, "
		}
		set = append(set, objects(t, strings.Replace(dbService(ns, spec), "name: db", "name: "+name, 1))...)
	}
	cs, err := manager().ApplyAll(ctx, set, ssa.ApplyOptions{})
	if err != nil {
		t.Fatalf("removing defaulted or allocated fields: %v", err)
	}
	for _, c := range cs {
		if c.Action != ssa.Configured {
			t.Errorf("%s, want configured", c)
		}
	}
	for name, b := range before {
		if got := liveService(t, ns, name); got.UID != b.UID {
			t.Errorf("%s was recreated", name)
		}
	}
	cs = apply(t, set, ssa.ApplyOptions{})
	for _, c := range cs {
		if c.Action != ssa.Unchanged {
			t.Errorf("second apply: %s, want unchanged", c)
		}
	}
}

// An object first created with `kubectl apply` (client-side) and then
// adopted: the owner labels the applier adds are not drift by
// kubectl-client-side-apply; nothing is, as the applier never applied it.
func TestAdoptionIsNotDrift(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: ns,
		Labels:      map[string]string{"app": "shop"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap"}`}},
		Data: map[string]string{"FEATURE_X": "0"}}
	if err := env.Client.Create(ctx, cm, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	set := objects(t, configMap(ns, "adopted", "1"))
	set[0].SetLabels(map[string]string{"app": "shop", "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})
	cs := apply(t, set, ssa.ApplyOptions{})
	if len(cs) != 1 || cs[0].Action != ssa.Configured || len(cs[0].Drift) != 0 {
		t.Errorf("adoption: %v drift %v, want configured without drift", cs, cs[0].Drift)
	}
	// From now on a change by another manager is drift.
	live := get(t, "ConfigMap", "v1", ns, "adopted")
	unstructured.SetNestedField(live.Object, "2", "data", "FEATURE_X")
	live.SetLabels(map[string]string{"app": "shop-edited", "kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	cs = apply(t, set, ssa.ApplyOptions{})
	var drift []string
	for _, d := range cs[0].Drift {
		drift = append(drift, d.String())
	}
	want := `.data.FEATURE_X "1" → "2" (by kubectl-edit)` + "\n" + `.metadata.labels.app "shop" → "shop-edited" (by kubectl-edit)`
	if strings.Join(drift, "\n") != want {
		t.Errorf("drift after an edit:\n%s\nwant:\n%s", strings.Join(drift, "\n"), want)
	}
}

// A key removed from Git and deleted by the apply is listed as removed,
// not as drift; so is a key kubectl had added before the object was
// adopted and the apply deletes.
func TestRemovedFieldsAreListed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	two := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: %s, labels: {team: a}}\ndata: {FEATURE_X: \"1\", OLD: x}\n", ns)
	apply(t, objects(t, two), ssa.ApplyOptions{})
	cs := apply(t, objects(t, configMap(ns, "cfg", "1")), ssa.ApplyOptions{})
	if len(cs) != 1 || cs[0].Action != ssa.Configured || len(cs[0].Drift) != 0 ||
		strings.Join(cs[0].Removed, ",") != ".data.OLD,.metadata.labels.team" {
		t.Errorf("Git removal: %v removed %q drift %v, want configured with .data.OLD and .metadata.labels.team removed", cs, cs[0].Removed, cs[0].Drift)
	}
	if data, _, _ := unstructured.NestedStringMap(get(t, "ConfigMap", "v1", ns, "cfg").Object, "data"); data["OLD"] != "" {
		t.Errorf("OLD kept: %v", data)
	}

	kubectl := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns},
		Data: map[string]string{"FEATURE_X": "1", "LEGACY": "yes"}}
	if err := env.Client.Create(ctx, kubectl, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	cs = apply(t, objects(t, configMap(ns, "legacy", "1")), ssa.ApplyOptions{})
	if len(cs) != 1 || len(cs[0].Drift) != 0 || strings.Join(cs[0].Removed, ",") != ".data.LEGACY" {
		t.Errorf("adoption: %v removed %q drift %v, want .data.LEGACY removed", cs, cs[0].Removed, cs[0].Drift)
	}
}
