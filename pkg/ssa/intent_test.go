package ssa_test

import (
	"context"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestIntendedScopesNamespacesAsApplied: the entries recorded before an
// apply have the ids the apply gives: a namespace set on a cluster-scoped
// kind (served, or declared Cluster by a CRD of the set) is cleared; a
// kind neither served nor declared is left out.
func TestIntendedScopesNamespacesAsApplied(t *testing.T) {
	set := objects(t,
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns1}\n",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: ns1}\n",
		"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: globes.example.io}\n"+
			"spec: {group: example.io, scope: Cluster, names: {kind: Globe, plural: globes}}\n",
		"apiVersion: example.io/v1\nkind: Globe\nmetadata: {name: g, namespace: ns1}\n",
		"apiVersion: unknown.example.io/v1\nkind: Thing\nmetadata: {name: x, namespace: ns1}\n",
	)
	var got []string
	for _, c := range manager().Intended(set) {
		got = append(got, c.Meta.ID()+"@"+c.Version)
	}
	want := []string{"ns1_a__ConfigMap@v1", "_r_rbac.authorization.k8s.io_ClusterRole@v1",
		"_globes.example.io_apiextensions.k8s.io_CustomResourceDefinition@v1", "_g_example.io_Globe@v1"}
	if len(got) != len(want) {
		t.Fatalf("Intended = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %s, want %s", i, got[i], want[i])
		}
	}
}

// TestDeleteStaleOfAnUnservedKindIsGone: an inventory entry whose kind the
// API server does not serve (recorded before its CRD was applied, or its
// CRD removed) names no object: it is dropped, not failed for ever.
func TestDeleteStaleOfAnUnservedKindIsGone(t *testing.T) {
	stale := []ssa.Change{{Meta: ssa.ObjMeta{GroupKind: schema.GroupKind{Group: "unknown.example.io", Kind: "Thing"}, Namespace: "ns1", Name: "x"}, Version: "v1"}}
	deleted, failed, err := manager().DeleteStale(context.Background(), stale, ssa.PruneOptions{})
	if err != nil || len(failed) != 0 || len(deleted) != 1 || deleted[0].Action != ssa.Deleted {
		t.Fatalf("DeleteStale = %v, failed %v, err %v; want the entry dropped as deleted", deleted, failed, err)
	}
}
