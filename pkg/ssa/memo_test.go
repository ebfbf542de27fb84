package ssa_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestUnchangedMemo: with a memo, an object applied or planned Unchanged
// is not dry-run again while neither the live object (its resourceVersion)
// nor the desired one changes; drift, a change in Git or another scope is
// dry-run and found as without the memo.
func TestUnchangedMemo(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	var dryRuns atomic.Int64
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: manager().Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	counting := interceptor.NewClient(wc, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			po := &client.PatchOptions{}
			po.ApplyOptions(opts)
			if len(po.DryRun) > 0 {
				dryRuns.Add(1)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	memo := ssa.NewUnchangedMemo(0, 0)
	m := manager()
	m.Client, m.Memo, m.MemoScope = counting, memo, "ns/ks"
	run := func(set []*unstructured.Unstructured) (map[string]ssa.Action, int64) {
		t.Helper()
		before := dryRuns.Load()
		cs, err := m.ApplyAll(ctx, set, ssa.ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return actions(cs), dryRuns.Load() - before
	}
	a, b := "ConfigMap/"+ns+"/a", "ConfigMap/"+ns+"/b"
	set := objects(t, configMap(ns, "a", "1"), configMap(ns, "b", "1"))

	if acts, n := run(set); acts[a] != ssa.Created || acts[b] != ssa.Created || n != 2 {
		t.Fatalf("first apply: %v with %d dry-runs", acts, n)
	}
	for _, step := range []string{"second", "third"} {
		if acts, n := run(set); acts[a] != ssa.Unchanged || acts[b] != ssa.Unchanged || n != 0 || memo.Len() != 2 {
			t.Fatalf("%s apply: %v with %d dry-runs (memo %d), want unchanged without dry-runs", step, acts, n, memo.Len())
		}
	}

	// Drift: another manager edits a; only a is dry-run, and corrected.
	live := get(t, "ConfigMap", "v1", ns, "a")
	unstructured.SetNestedField(live.Object, "edited", "data", "FEATURE_X")
	if err := env.Client.Update(ctx, live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if acts, n := run(set); acts[a] != ssa.Configured || acts[b] != ssa.Unchanged || n != 1 {
		t.Fatalf("after drift: %v with %d dry-runs, want a configured (1 dry-run), b unchanged", acts, n)
	}
	if v, _, _ := unstructured.NestedString(get(t, "ConfigMap", "v1", ns, "a").Object, "data", "FEATURE_X"); v != "1" {
		t.Errorf("drift not corrected: %q", v)
	}

	// A change in Git: b is dry-run and configured.
	set2 := objects(t, configMap(ns, "a", "1"), configMap(ns, "b", "2"))
	if acts, n := run(set2); acts[b] != ssa.Configured || n < 1 {
		t.Fatalf("after a change in Git: %v with %d dry-runs", acts, n)
	}

	// Another scope (another Kustomization, another identity): dry-run.
	run(set2)
	m.MemoScope = "ns/other"
	if acts, n := run(set2); acts[a] != ssa.Unchanged || n != 2 {
		t.Fatalf("another scope: %v with %d dry-runs, want 2", acts, n)
	}

	// An entry stands for the TTL only: past it, the object is dry-run.
	m.Memo = ssa.NewUnchangedMemo(0, time.Millisecond)
	run(set2)
	time.Sleep(2 * time.Millisecond) // past the 1 ms TTL (no "nothing happened" check follows)
	if acts, n := run(set2); acts[a] != ssa.Unchanged || n != 2 {
		t.Fatalf("past the TTL: %v with %d dry-runs, want 2", acts, n)
	}
	if ssa.NewUnchangedMemo(0, -1) != nil {
		t.Error("a negative TTL should turn the memo off")
	}

	// Bounded: the least recently used entries go.
	small := ssa.NewUnchangedMemo(1, 0)
	m.Memo = small
	run(set2)
	if small.Len() != 1 {
		t.Errorf("a memo of 1 entry holds %d", small.Len())
	}
}

// TestUnchangedMemoCRDDropsField: a custom resource planned Unchanged sets
// spec.color; its CRD (applied by another Kustomization, say) then no
// longer declares the field. The custom resource itself was not written
// (same resourceVersion, same desired object), but its dry-run now fails
// (field not declared in schema), and so must the next apply, as Flux's.
func TestUnchangedMemoCRDDropsField(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	const group = "memo.example.com"
	schema := func(props string) []*unstructured.Unstructured {
		return objects(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"+
			"metadata: {name: gadgets."+group+"}\n"+
			"spec: {group: "+group+", names: {kind: Gadget, plural: gadgets}, scope: Namespaced, versions: [{name: v1, served: true, storage: true, "+
			"schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {"+props+"}}}}}}]}\n")
	}
	plain := manager() // the other Kustomization's: no memo
	if _, err := plain.ApplyAll(ctx, schema("size: {type: integer}, color: {type: string}"), ssa.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Client.Delete(ctx, schema("")[0]) }()
	gadget := objects(t, "apiVersion: "+group+"/v1\nkind: Gadget\nmetadata: {name: g, namespace: "+ns+"}\nspec: {size: 1, color: red}\n")
	id := "Gadget/" + ns + "/g"
	m := manager()
	m.Memo, m.MemoScope = ssa.NewUnchangedMemo(0, 0), "ns/apps"
	for i, want := range []ssa.Action{ssa.Created, ssa.Unchanged, ssa.Unchanged} {
		cs, err := m.ApplyAll(ctx, gadget, ssa.ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := actions(cs)[id]; a != want {
			t.Fatalf("apply %d: %s, want %s", i+1, a, want)
		}
	}

	// The CRD drops spec.color; wait until a plain dry-run fails.
	if _, err := plain.ApplyAll(ctx, schema("size: {type: integer}"), ssa.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, _, err := plain.DryRun(ctx, gadget[0], ssa.ApplyOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("the dry-run without memo still passes after the CRD dropped spec.color: %v", err)
	}
	cs, err := m.ApplyAll(ctx, gadget, ssa.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), id+" dry-run failed") {
		t.Errorf("after the CRD dropped spec.color: %v, error %v; want %s dry-run failed", actions(cs), err, id)
	}
}
