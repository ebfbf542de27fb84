package normalize

import (
	"bytes"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// managedPaths returns the concrete paths in u of the fields that one of
// managers owns in live's metadata.managedFields (any operation, any
// subresource: an HPA's writes through the scale subresource count) and
// that are present in both u and live (and in also, when not nil). Argo CD drops a trusted manager's
// fields only where desired and live both have them (a field only one side
// has is not a conflict with that manager), argocd-contract §1.10. Field
// sets are read with structured-merge-diff's fieldpath, the API server's
// own form: only leaves count (an item's "." alone, without fields under
// it, names the whole item).
func managedPaths(u, live, also *unstructured.Unstructured, managers []string) [][]any {
	if len(managers) == 0 || live == nil {
		return nil
	}
	var out [][]any
	for _, e := range live.GetManagedFields() {
		if !slices.Contains(managers, e.Manager) || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) != nil {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			steps, ok := fieldSteps(p)
			if !ok {
				return
			}
			if _, inLive, ok := resolve(live.Object, steps); !ok || !inLive {
				return
			}
			if also != nil {
				if _, inAlso, ok := resolve(also.Object, steps); !ok || !inAlso {
					return
				}
			}
			if path, inU, ok := resolve(u.Object, steps); ok && inU {
				out = append(out, path)
			}
		})
	}
	return out
}

// fieldSteps turns a managed-fields path into steps: a field name is a map
// key, a k:{...} item is found by its key fields, a v:... item by its
// value, an i:N item by its position.
func fieldSteps(p fieldpath.Path) ([]step, bool) {
	out := make([]step, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			out = append(out, step{key: *pe.FieldName})
		case pe.Key != nil:
			match := map[string]any{}
			for _, f := range *pe.Key {
				match[f.Name] = f.Value.Unstructured()
			}
			out = append(out, step{item: true, index: -1, match: match})
		case pe.Value != nil:
			out = append(out, step{item: true, index: -1, value: (*pe.Value).Unstructured(), byValue: true})
		case pe.Index != nil:
			out = append(out, step{item: true, index: *pe.Index})
		default:
			return nil, false
		}
	}
	return out, true
}
