package helmvalues

import (
	"reflect"
	"testing"
)

// TestMerge: maps merge key by key at every depth, anything else in b
// replaces a's value, and neither input changes.
func TestMerge(t *testing.T) {
	a := map[string]any{"image": map[string]any{"repository": "app", "tag": "1"}, "replicas": 1, "list": []any{1, 2}}
	b := map[string]any{"image": map[string]any{"tag": "2"}, "list": []any{3}, "extra": true}
	got := Merge(a, b)
	want := map[string]any{"image": map[string]any{"repository": "app", "tag": "2"}, "replicas": 1, "list": []any{3}, "extra": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	if a["image"].(map[string]any)["tag"] != "1" || len(b) != 3 {
		t.Errorf("inputs changed: a %v, b %v", a, b)
	}
}
