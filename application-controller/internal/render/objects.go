package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// decodeStream decodes a YAML (multi-document) or JSON stream into
// objects, name naming it in errors. Empty and null documents are skipped;
// every other document must be an object with apiVersion and kind.
// `kind: List` items are expanded as objects (see appendObject).
func decodeStream(data []byte, name string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		var doc any
		if err == nil && len(raw) > 0 {
			// utiljson keeps integers as int64, as unstructured expects.
			err = utiljson.Unmarshal(raw, &doc)
		}
		if err != nil {
			return out, fmt.Errorf("failed to unmarshal '%s': %s", name, err)
		}
		if doc == nil {
			continue
		}
		if out, err = appendObject(out, doc, name); err != nil {
			return out, err
		}
	}
}

// appendObject appends the decoded document doc to objs. As Argo CD
// expands its target objects: an object with an items array (a List) adds
// its items instead, and a List whose items are null adds nothing.
func appendObject(objs []*unstructured.Unstructured, doc any, name string) ([]*unstructured.Unstructured, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return objs, fmt.Errorf("failed to unmarshal '%s': a document is not an object", name)
	}
	if items, ok := m["items"]; ok {
		if list, ok := items.([]any); ok {
			for _, it := range list {
				if it == nil {
					continue
				}
				var err error
				if objs, err = appendObject(objs, it, name); err != nil {
					return objs, err
				}
			}
			return objs, nil
		}
		_, spec := m["spec"]
		_, status := m["status"]
		if items == nil && !spec && !status {
			return objs, nil
		}
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		what := "kind"
		if u.GetAPIVersion() == "" {
			what = "apiVersion"
		}
		return objs, fmt.Errorf("failed to unmarshal '%s': object %s is missing", name, what)
	}
	return append(objs, u), nil
}
