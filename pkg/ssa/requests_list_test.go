package ssa_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownedConfigMap is configMap with the owner labels ListLabels names.
func ownedConfigMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {owner/name: app, owner/namespace: apps}}\n"+
		"data: {FEATURE_X: %q}\n", name, ns, value)
}

// With ListLabels, an unchanged set reads the objects that share a kind,
// a namespace and the owner labels with one LIST, and any other object
// with a GET; an object the LIST misses (its owner label removed in the
// cluster) is read on its own and applied again; a changed object is
// dry-run first and not listed.
func TestUnchangedObjectsOfOneKindReadByOneList(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	m, counter := countingManager(t)
	m.Memo, m.MemoScope, m.ListLabels = ssa.NewUnchangedMemo(0, 0), "ns/list", []string{"owner/name", "owner/namespace"}
	set := func(value string) []string {
		return []string{ownedConfigMap(ns, "a", "1"), ownedConfigMap(ns, "b", "1"), ownedConfigMap(ns, "c", value),
			fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: %s, labels: {owner/name: app, owner/namespace: apps}}\n"+
				"stringData: {K: v}\n", ns)}
	}
	steps := []struct {
		name, value string
		before      func()
		want        map[string]int
		configured  int
	}{
		{"first apply", "1", nil, map[string]int{"PATCH configmaps dry-run": 3, "PATCH configmaps": 3, "PATCH secrets dry-run": 1, "PATCH secrets": 1}, 0},
		{"unchanged", "1", nil, map[string]int{"LIST configmaps": 1, "GET secrets": 1}, 0},
		{"an owner label removed in the cluster", "1", func() {
			patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"owner/name":null}}}`))
			cm := &corev1.ConfigMap{}
			cm.Namespace, cm.Name = ns, "b"
			if err := env.Client.Patch(ctx, cm, patch); err != nil {
				t.Fatal(err)
			}
		}, map[string]int{"LIST configmaps": 1, "GET configmaps": 1, "GET secrets": 1, "PATCH configmaps dry-run": 1, "PATCH configmaps": 1}, 1},
		{"a changed ConfigMap", "2", nil, map[string]int{"LIST configmaps": 1, "GET configmaps": 1, "GET secrets": 1,
			"PATCH configmaps dry-run": 1, "PATCH configmaps": 1}, 1},
		{"unchanged after the change", "2", nil, map[string]int{"LIST configmaps": 1, "GET secrets": 1}, 0},
	}
	for _, step := range steps {
		if step.before != nil {
			step.before()
		}
		counter.take()
		cs, err := m.ApplyAll(ctx, objects(t, set(step.value)...), ssa.ApplyOptions{})
		if err != nil {
			t.Fatal(step.name, err)
		}
		if got := counter.take(); !maps.Equal(got, step.want) {
			t.Errorf("%s: requests %s, want %s", step.name, format(got), format(step.want))
		}
		configured := 0
		for _, c := range cs {
			if c.Action == ssa.Configured {
				configured++
			}
		}
		if step.name != "first apply" && configured != step.configured {
			t.Errorf("%s: %d configured, want %d (%v)", step.name, configured, step.configured, cs)
		}
	}
}

// An identity that may read objects one by one but not list them gets the
// GETs: its refused LIST is not tried again.
func TestRefusedListIsNotTriedAgain(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "no-list", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-list", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "no-list"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "no-list"}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	m, counter := countingManager(t, "no-list")
	m.Memo, m.MemoScope, m.ListLabels = ssa.NewUnchangedMemo(0, 0), "ns/no-list", []string{"owner/name", "owner/namespace"}
	docs := []string{ownedConfigMap(ns, "a", "1"), ownedConfigMap(ns, "b", "1")}
	for i, want := range []map[string]int{
		{"PATCH configmaps dry-run": 2, "PATCH configmaps": 2},
		{"LIST configmaps": 1, "GET configmaps": 2},
		{"GET configmaps": 2},
	} {
		counter.take()
		if _, err := m.ApplyAll(ctx, objects(t, docs...), ssa.ApplyOptions{}); err != nil {
			t.Fatal(i, err)
		}
		if got := counter.take(); !maps.Equal(got, want) {
			t.Errorf("apply %d: requests %s, want %s", i, format(got), format(want))
		}
	}
}
