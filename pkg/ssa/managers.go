package ssa

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// managerOf returns the manager whose managed fields reach deepest along
// path in the live object, the most recent on ties. A list item is found in
// a field set by its key (k:{...}), value (v:...) or index (i:N), read from
// the live item at the path's position.
func managerOf(entries []metav1.ManagedFieldsEntry, path []segment, live map[string]any) string {
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
		depth := reachLive(set, path, live)
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

// reachLive counts how many segments of path the field set contains,
// following list items by their identity in the live object.
func reachLive(set map[string]any, path []segment, live any) int {
	depth := 0
	cur := set
	for _, s := range path {
		var next any
		if s.index < 0 {
			next = cur["f:"+s.field]
			if m, ok := live.(map[string]any); ok {
				live = m[s.field]
			} else {
				live = nil
			}
		} else {
			var item any
			if l, ok := live.([]any); ok && s.index < len(l) {
				item = l[s.index]
			}
			next = cur[itemKey(cur, item, s.index)]
			live = item
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

// itemKey returns the field-set key among set's keys that names the live
// list item at index: k:{"name":"web"} when the item's fields match, v:<json>
// when it equals the value, i:<index>; "" when none does.
func itemKey(set map[string]any, item any, index int) string {
	for k := range set {
		switch {
		case strings.HasPrefix(k, "k:"):
			var key map[string]any
			obj, ok := item.(map[string]any)
			if !ok || json.Unmarshal([]byte(k[2:]), &key) != nil {
				continue
			}
			match := true
			for f, v := range key {
				if !sameJSON(obj[f], v) {
					match = false
					break
				}
			}
			if match {
				return k
			}
		case strings.HasPrefix(k, "v:"):
			var v any
			if json.Unmarshal([]byte(k[2:]), &v) == nil && sameJSON(item, v) {
				return k
			}
		case k == fmt.Sprintf("i:%d", index):
			return k
		}
	}
	return ""
}

// sameJSON compares values as JSON, so int64 and float64 numbers agree.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
