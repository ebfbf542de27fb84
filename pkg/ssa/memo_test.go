package ssa_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestUnchangedMemo: with a memo, an object planned Unchanged is not
// dry-run again while neither the live object (its resourceVersion) nor
// the desired one changes; drift, a change in Git or another scope is
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
	memo := ssa.NewUnchangedMemo(0)
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
	if acts, n := run(set); acts[a] != ssa.Unchanged || acts[b] != ssa.Unchanged || n != 2 {
		t.Fatalf("second apply: %v with %d dry-runs, want both unchanged, dry-run", acts, n)
	}
	if acts, n := run(set); acts[a] != ssa.Unchanged || acts[b] != ssa.Unchanged || n != 0 || memo.Len() != 2 {
		t.Fatalf("third apply: %v with %d dry-runs (memo %d), want unchanged without dry-runs", acts, n, memo.Len())
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

	// Bounded: the least recently used entries go.
	small := ssa.NewUnchangedMemo(1)
	m.Memo = small
	run(set2)
	if small.Len() != 1 {
		t.Errorf("a memo of 1 entry holds %d", small.Len())
	}
}
