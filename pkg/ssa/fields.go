package ssa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Managed fields (FieldsV1) are read with structured-merge-diff's fieldpath,
// the API server's own representation: a field is a FieldName element, a
// list item a Key (k:{...}), Value (v:...) or Index (i:N) element. Without
// the schema the list kind is not known, so an item of an object is found
// by matching it against the elements the field set holds at that place.

// fieldSet parses the field set of a managed-fields entry; nil when it has
// none or it cannot be read.
func fieldSet(e metav1.ManagedFieldsEntry) *fieldpath.Set {
	if e.FieldsV1 == nil {
		return nil
	}
	s := &fieldpath.Set{}
	if s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) != nil {
		return nil
	}
	return s
}

// holds reports whether the set has p as a member or holds members below it.
func holds(s *fieldpath.Set, p fieldpath.Path) bool {
	cur := s
	for i, pe := range p {
		next, ok := cur.Children.Get(pe)
		if !ok {
			return i == len(p)-1 && cur.Members.Has(pe)
		}
		cur = next
	}
	return true
}

// elements lists, in fieldpath order, the elements the set holds at its
// top: its members and the parents of deeper members.
func elements(s *fieldpath.Set) []fieldpath.PathElement {
	var out []fieldpath.PathElement
	s.Members.Iterate(func(pe fieldpath.PathElement) { out = append(out, pe) })
	s.Children.Iterate(func(pe fieldpath.PathElement) { out = append(out, pe) })
	slices.SortFunc(out, fieldpath.PathElement.Compare)
	return slices.CompactFunc(out, fieldpath.PathElement.Equals)
}

// matchItem reports whether the list element pe names item, found at
// index in its list.
func matchItem(pe fieldpath.PathElement, item any, index int) bool {
	switch {
	case pe.Key != nil:
		obj, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			v, ok := obj[f.Name]
			if !ok || !value.Equals(f.Value, value.NewValueInterface(v)) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(*pe.Value, value.NewValueInterface(item))
	case pe.Index != nil:
		return *pe.Index == index
	}
	return false
}

// elementFor returns the list element among those the set holds at its top
// that names item, found at index.
func elementFor(s *fieldpath.Set, item any, index int) (fieldpath.PathElement, bool) {
	for _, pe := range elements(s) {
		if pe.FieldName == nil && matchItem(pe, item, index) {
			return pe, true
		}
	}
	return fieldpath.PathElement{}, false
}

// pathIn follows path, read in the object live (fields by name, list items
// by position), through the field set and returns the longest prefix the
// set holds, with list items named by the set's elements.
func pathIn(set *fieldpath.Set, path []segment, live any) fieldpath.Path {
	var out fieldpath.Path
	cur := set
	for _, s := range path {
		var pe fieldpath.PathElement
		if s.index < 0 {
			pe = fieldpath.FieldNameElement(s.field)
			m, _ := live.(map[string]any)
			live = m[s.field]
		} else {
			var item any
			if l, ok := live.([]any); ok && s.index < len(l) {
				item = l[s.index]
			}
			var ok bool
			if pe, ok = elementFor(cur, item, s.index); !ok {
				return out
			}
			live = item
		}
		next, ok := cur.Children.Get(pe)
		if !ok {
			if cur.Members.Has(pe) {
				out = append(out, pe)
			}
			return out
		}
		out = append(out, pe)
		cur = next
	}
	return out
}

// managerOf returns the manager whose managed fields reach deepest along
// path in the live object, the most recent on ties.
func managerOf(entries []metav1.ManagedFieldsEntry, path []segment, live map[string]any) string {
	best, bestDepth := "", 0
	var bestTime int64
	for _, e := range entries {
		set := fieldSet(e)
		if set == nil {
			continue
		}
		depth := len(pathIn(set, path, live))
		var t int64
		if e.Time != nil {
			t = e.Time.Unix()
		}
		if depth > bestDepth || (depth == bestDepth && depth > 0 && t > bestTime) {
			best, bestDepth, bestTime = e.Manager, depth, t
		}
	}
	return best
}

// lookupField follows a field path in an object and returns the value
// found there.
func lookupField(obj any, path fieldpath.Path) (any, bool) {
	v, _, ok := walkField(obj, path)
	return v, ok
}

// fieldPath renders a field path the way Diff does, e.g.
// `.spec.ports[0].nodePort`, with list positions read from obj.
func fieldPath(obj any, path fieldpath.Path) string {
	_, p, ok := walkField(obj, path)
	if !ok {
		var b strings.Builder
		for _, pe := range path {
			b.WriteString("." + elementString(pe))
		}
		return b.String()
	}
	return p
}

// elementString is a field's name, or a list element as managed fields
// write it (k:{"name":"web"}).
func elementString(pe fieldpath.PathElement) string {
	if pe.FieldName != nil {
		return *pe.FieldName
	}
	s, err := fieldpath.SerializePathElement(pe)
	if err != nil {
		return pe.String()
	}
	return s
}

// walkField follows path in obj and returns the value there and the path
// rendered with list positions.
func walkField(obj any, path fieldpath.Path) (any, string, bool) {
	cur := obj
	var rendered strings.Builder
	for _, pe := range path {
		if pe.FieldName != nil {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, "", false
			}
			if cur, ok = m[*pe.FieldName]; !ok {
				return nil, "", false
			}
			rendered.WriteString("." + *pe.FieldName)
			continue
		}
		l, ok := cur.([]any)
		if !ok {
			return nil, "", false
		}
		idx := itemIndex(l, pe)
		if idx < 0 {
			return nil, "", false
		}
		cur = l[idx]
		fmt.Fprintf(&rendered, "[%d]", idx)
	}
	return cur, rendered.String(), true
}

// itemIndex is the position of the first item of l that pe names, or -1.
func itemIndex(l []any, pe fieldpath.PathElement) int {
	for i, item := range l {
		if matchItem(pe, item, i) {
			return i
		}
	}
	return -1
}

// removeField deletes the value at path from obj, if present; a list item
// is taken out of its list, so the ones after it move up.
func removeField(obj map[string]any, path fieldpath.Path) {
	var parent any = obj
	for i, pe := range path {
		last := i == len(path)-1
		if pe.FieldName != nil {
			m, ok := parent.(map[string]any)
			if !ok {
				return
			}
			if last {
				delete(m, *pe.FieldName)
				return
			}
			parent = m[*pe.FieldName]
			continue
		}
		l, ok := parent.([]any)
		idx := itemIndex(l, pe)
		if !ok || idx < 0 {
			return
		}
		if last {
			// The list is held by its parent: write the shorter one back.
			setAt(obj, path[:i], append(l[:idx:idx], l[idx+1:]...))
			return
		}
		parent = l[idx]
	}
}

// setAt replaces the value at path (which exists) in obj with v.
func setAt(obj map[string]any, path fieldpath.Path, v any) {
	parent, _ := lookupField(obj, path[:len(path)-1])
	pe := path[len(path)-1]
	switch c := parent.(type) {
	case map[string]any:
		if pe.FieldName != nil {
			c[*pe.FieldName] = v
		}
	case []any:
		if idx := itemIndex(c, pe); idx >= 0 {
			c[idx] = v
		}
	}
}

// removedPath renders a field path read in obj, like
// `.spec.template.spec.containers[name=web].env[name=OLD]`: fields by
// name, keyed list items by their key fields (which identify an item and
// are no secret), other list items by their position in obj.
func removedPath(obj any, path fieldpath.Path) string {
	var b strings.Builder
	cur := obj
	for i, pe := range path {
		if pe.Key != nil {
			parts := make([]string, 0, len(*pe.Key))
			for _, f := range *pe.Key { // sorted by name
				v := f.Value.Unstructured()
				if s, ok := v.(string); ok {
					parts = append(parts, f.Name+"="+s)
				} else {
					parts = append(parts, f.Name+"="+render(v))
				}
			}
			b.WriteString("[" + strings.Join(parts, ",") + "]")
			cur, _ = lookupField(obj, path[:i+1])
			continue
		}
		next, p, ok := walkField(cur, fieldpath.Path{pe})
		if !ok {
			b.WriteString("." + elementString(pe))
			cur = nil
			continue
		}
		b.WriteString(p)
		cur = next
	}
	return b.String()
}

// fieldName is the name of a field element, "" for a list element.
func fieldName(pe fieldpath.PathElement) string {
	if pe.FieldName == nil {
		return ""
	}
	return *pe.FieldName
}

// sameJSON compares values as JSON, so int64 and float64 numbers agree.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
