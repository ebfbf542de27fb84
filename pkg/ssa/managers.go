package ssa

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managerOf returns the manager whose managed fields reach deepest along
// path, the most recent on ties. List items are matched by position only
// when the set names them by index; keyed items (k:{...}) match any item, so
// attribution inside lists is best effort.
func managerOf(entries []metav1.ManagedFieldsEntry, path []segment) string {
	best, bestDepth := "", 0
	var bestTime int64
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &set) != nil {
			continue
		}
		depth := reach(set, path)
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

// reach counts how many segments of path the field set contains.
func reach(set map[string]any, path []segment) int {
	depth := 0
	cur := set
	for _, s := range path {
		var next any
		if s.index < 0 {
			next = cur["f:"+s.field]
		} else {
			// Items of associative lists are keyed (k:{...}); plain lists have
			// no per-item entries. Accept the first keyed item.
			for k, v := range cur {
				if strings.HasPrefix(k, "k:") || strings.HasPrefix(k, "i:") {
					next = v
					break
				}
			}
		}
		m, ok := next.(map[string]any)
		if !ok {
			return depth
		}
		depth++
		cur = m
	}
	return depth
}
