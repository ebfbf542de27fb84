package ssa_test

import "testing"

func TestFieldDriftPointerEscapesKeysAndNumbersItems(t *testing.T) {
	got := driftOf(t,
		map[string]any{"data": map[string]any{"a.b/c~d": "1"}, "spec": map[string]any{"items": []any{"x", "y"}}},
		map[string]any{"data": map[string]any{"a.b/c~d": "2"}, "spec": map[string]any{"items": []any{"x", "z"}}})
	want := []string{"/data/a.b~1c~0d", "/spec/items/1"}
	if len(got) != len(want) {
		t.Fatalf("got %d fields %v, want %v", len(got), got, want)
	}
	for i, w := range want {
		if p := got[i].Pointer(); p != w {
			t.Errorf("field %s: Pointer() = %q, want %q", got[i].Path, p, w)
		}
	}
}
