package ssa

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// IgnoreRule excludes fields of the matching objects from drift detection
// and correction. Flux compatible: a Kustomization's spec.ignore.
type IgnoreRule struct {
	// Paths are RFC 6901 JSON pointers, e.g. /spec/replicas or
	// /metadata/annotations/example.com~1owner.
	Paths []string
	// Match selects the objects the rule applies to; nil means all.
	Match func(*unstructured.Unstructured) bool
}

func ignoredPaths(rules []IgnoreRule, u *unstructured.Unstructured) [][]string {
	var out [][]string
	for _, r := range rules {
		if r.Match != nil && !r.Match(u) {
			continue
		}
		for _, p := range r.Paths {
			if tokens := pointerTokens(p); len(tokens) > 0 {
				out = append(out, tokens)
			}
		}
	}
	return out
}

// pointerTokens splits and unescapes a JSON pointer; nil for "" or "/".
func pointerTokens(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// blankPointer deletes the value at tokens from obj, a copy made for the
// comparison only, if present.
func blankPointer(obj map[string]any, tokens []string) {
	var cur any = obj
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				delete(c, t)
				return
			}
			cur = c[t]
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(c) {
				return
			}
			if last {
				// Lists are compared whole; blank the item rather than
				// shifting the ones after it.
				c[idx] = nil
				return
			}
			cur = c[idx]
		default:
			return
		}
	}
}

// withoutPaths returns a copy of u without the given fields.
func withoutPaths(u *unstructured.Unstructured, paths [][]string) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, p := range paths {
		blankPointer(c.Object, p)
	}
	return c
}

// ownedByOther reports whether a field manager other than owner holds the
// field at tokens, read in the live object, through any operation or
// subresource, and returns the field as that manager's field set names it
// (a list item by its key or value, not by its position). A token is a
// list position only where live has a list: a map's key "0" is a key.
func ownedByOther(entries []metav1.ManagedFieldsEntry, owner string, tokens []string, live map[string]any) (fieldpath.Path, bool) {
	path := make([]segment, len(tokens))
	var cur any = live
	for i, t := range tokens {
		path[i] = segment{field: t, index: -1}
		switch c := cur.(type) {
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(c) {
				return nil, false
			}
			path[i] = segment{index: n}
			cur = c[n]
		case map[string]any:
			cur = c[t]
		default:
			cur = nil
		}
	}
	for _, e := range entries {
		if e.Manager == owner {
			continue
		}
		if set := fieldSet(e); set != nil {
			if field := pathIn(set, path, live); len(field) == len(path) {
				return field, true
			}
		}
	}
	return nil, false
}
