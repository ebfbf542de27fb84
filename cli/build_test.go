package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBuildOutputPutsASeparatorBeforeEachObject: `eddy build
// kustomization` prints "---" before every object, the first included,
// and nothing for no objects.
func TestBuildOutputPutsASeparatorBeforeEachObject(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name}}}
	}
	for _, c := range []struct {
		objs []*unstructured.Unstructured
		want string
	}{
		{nil, ""},
		{[]*unstructured.Unstructured{cm("a")}, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"},
		{[]*unstructured.Unstructured{cm("a"), cm("b")},
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"},
	} {
		got, err := objectsYAML(c.objs)
		if err != nil || string(got) != c.want {
			t.Errorf("objectsYAML(%d objects) = %q, %v; want %q", len(c.objs), got, err, c.want)
		}
	}
}
