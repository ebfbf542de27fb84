package ssa_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
)

// TestBeforeWriteRunsBetweenDryRunsAndWrites: BeforeWrite runs once, when
// the set's dry-runs are done and nothing is written yet; a set refused by
// its dry-run never calls it.
func TestBeforeWriteRunsBetweenDryRunsAndWrites(t *testing.T) {
	ns := namespace(t)
	m, counter := countingManager(t)
	calls := 0
	var before map[string]int
	opts := ssa.ApplyOptions{BeforeWrite: func() { calls++; before = counter.take() }}
	set := objects(t, configMap(ns, "a", "1"), configMap(ns, "b", "1"))
	if _, err := m.ApplyAll(context.Background(), set, opts); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("BeforeWrite ran %d times, want once", calls)
	}
	for key := range before {
		if !strings.HasSuffix(key, "dry-run") && !strings.HasPrefix(key, "GET ") {
			t.Errorf("requests before BeforeWrite: %s, want dry-runs and reads only", format(before))
		}
	}
	if after := counter.take(); after["PATCH configmaps"] != 2 {
		t.Errorf("requests after BeforeWrite: %s, want the 2 applies", format(after))
	}

	calls = 0
	broken := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: broken, namespace: %s}\nspec: {replicas: 1, selector: {matchLabels: {app: a}}, template: {metadata: {labels: {app: b}}, spec: {containers: [{name: c, image: nginx}]}}}\n", ns)
	if _, err := m.ApplyAll(context.Background(), objects(t, configMap(ns, "c", "1"), broken), opts); err == nil {
		t.Fatal("a set with an invalid object applied")
	}
	if calls != 0 {
		t.Errorf("BeforeWrite ran %d times for a set refused by its dry-run, want never", calls)
	}
}
