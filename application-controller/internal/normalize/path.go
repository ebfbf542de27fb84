package normalize

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A field is named two ways here. A concrete path ([]any of string map
// keys and int list positions) is where a field sits in one object. A
// step path ([]step) says how to find it in any object: a list item by
// its identity (key fields, or its whole value, as managedFields name
// items) or by position. Ignored fields are found as concrete paths in the
// object they were computed on and moved to another object as steps.

// step is one element of a step path.
type step struct {
	// key is a map key; met at a list, a decimal position (JSON pointers
	// do not know which they address).
	key string
	// item marks a list item, found by match, else by value when byValue,
	// else by index.
	item    bool
	index   int
	match   map[string]any
	value   any
	byValue bool
}

// parsePointer splits an RFC 6901 pointer into unescaped tokens. The error
// says why it is not one: it must start with "/", and "~" must be followed
// by "0" or "1".
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("must start with \"/\"")
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		for j := 0; j < len(s); j++ {
			if s[j] == '~' && (j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1')) {
				return nil, fmt.Errorf("\"~\" must be followed by \"0\" or \"1\"")
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// pointer renders a concrete path as an RFC 6901 pointer.
func pointer(path []any) string {
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		switch v := t.(type) {
		case int:
			b.WriteString(strconv.Itoa(v))
		case string:
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(v, "~", "~0"), "/", "~1"))
		}
	}
	return b.String()
}

func keySteps(tokens []string) []step {
	out := make([]step, len(tokens))
	for i, t := range tokens {
		out[i] = step{key: t}
	}
	return out
}

// resolve finds steps in obj and returns the concrete path. ok is false
// when a list item cannot be found or the way passes through a scalar;
// a missing map key is no obstacle (the field is absent), and present
// says whether the field exists.
func resolve(obj any, steps []step) (path []any, present, ok bool) {
	cur, present := obj, true
	for _, s := range steps {
		switch c := cur.(type) {
		case map[string]any:
			if s.item {
				return nil, false, false
			}
			path = append(path, s.key)
			cur, present = c[s.key], present && hasKey(c, s.key)
		case []any:
			idx := findItem(c, s)
			if idx < 0 {
				return nil, false, false
			}
			path = append(path, idx)
			cur = c[idx]
		case nil:
			if s.item {
				return nil, false, false
			}
			path = append(path, s.key)
			present = false
		default:
			return nil, false, false
		}
	}
	return path, present, true
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// findItem is the position in l of the item s names; -1 when none.
func findItem(l []any, s step) int {
	switch {
	case !s.item:
		n, err := strconv.Atoi(s.key)
		if err != nil || n < 0 || n >= len(l) || strconv.Itoa(n) != s.key {
			return -1
		}
		return n
	case s.match != nil:
		return slices.IndexFunc(l, func(it any) bool {
			m, ok := it.(map[string]any)
			if !ok {
				return false
			}
			for k, v := range s.match {
				if !hasKey(m, k) || !sameJSON(m[k], v) {
					return false
				}
			}
			return true
		})
	case s.byValue:
		return slices.IndexFunc(l, func(it any) bool { return sameJSON(it, s.value) })
	case s.index >= 0 && s.index < len(l):
		return s.index
	}
	return -1
}

// stepsOf turns a concrete path of src into steps that find the same
// field elsewhere: a list item of maps by its "name" when that is unique
// in its list (the merge key of containers, env, volumes, ports...), else
// by position.
func stepsOf(src any, path []any) []step {
	out := make([]step, 0, len(path))
	cur := src
	for _, t := range path {
		switch v := t.(type) {
		case string:
			out = append(out, step{key: v})
			m, _ := cur.(map[string]any)
			cur = m[v]
		case int:
			l, _ := cur.([]any)
			s := step{item: true, index: v}
			if v >= 0 && v < len(l) {
				s.match = identity(l, v)
				cur = l[v]
			} else {
				cur = nil
			}
			out = append(out, s)
		}
	}
	return out
}

func identity(l []any, i int) map[string]any {
	m, ok := l[i].(map[string]any)
	if !ok {
		return nil
	}
	name, ok := m["name"].(string)
	if !ok {
		return nil
	}
	for j, it := range l {
		if o, ok := it.(map[string]any); ok && j != i && o["name"] == name {
			return nil
		}
	}
	return map[string]any{"name": name}
}

// get returns the value at a concrete path of obj.
func get(obj any, path []any) (any, bool) {
	cur := obj
	for _, t := range path {
		switch c := cur.(type) {
		case map[string]any:
			k, _ := t.(string)
			v, ok := c[k]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			n, ok := t.(int)
			if !ok || n < 0 || n >= len(c) {
				return nil, false
			}
			cur = c[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// removeAll deletes the concrete paths (all of obj) from obj, the last
// list positions first so the earlier ones still name the same items; a
// removed list item shifts the ones after it, as jq's del and a JSON
// patch's remove do.
func removeAll(obj map[string]any, paths [][]any) {
	sorted := slices.Clone(paths)
	slices.SortFunc(sorted, func(a, b []any) int { return -comparePaths(a, b) })
	for _, p := range sorted {
		if len(p) > 0 {
			remove(obj, p)
		}
	}
}

func comparePaths(a, b []any) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareToken(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareToken(a, b any) int {
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	switch {
	case aInt && bInt:
		return cmp.Compare(ai, bi)
	case aInt:
		return -1
	case bInt:
		return 1
	}
	return cmp.Compare(a.(string), b.(string))
}

// remove deletes the field at a non-empty concrete path, if present.
func remove(obj map[string]any, path []any) {
	parent, ok := get(obj, path[:len(path)-1])
	if !ok {
		return
	}
	switch c := parent.(type) {
	case map[string]any:
		if k, ok := path[len(path)-1].(string); ok {
			delete(c, k)
		}
	case []any:
		n, ok := path[len(path)-1].(int)
		if !ok || n < 0 || n >= len(c) {
			return
		}
		shorter := slices.Delete(slices.Clone(c), n, n+1)
		setConcrete(obj, path[:len(path)-1], shorter)
	}
}

// setConcrete replaces the value at an existing concrete path.
func setConcrete(obj map[string]any, path []any, v any) {
	parent, _ := get(obj, path[:len(path)-1])
	switch c := parent.(type) {
	case map[string]any:
		c[path[len(path)-1].(string)] = v
	case []any:
		c[path[len(path)-1].(int)] = v
	}
}

// put sets v at steps in obj, creating missing maps on the way; a list
// item that is missing is appended when it is the last step, and the
// field is left alone when an item on the way is missing.
func put(obj map[string]any, steps []step, v any) {
	var cur any = obj
	for i, s := range steps {
		last := i == len(steps)-1
		switch c := cur.(type) {
		case map[string]any:
			if s.item {
				return
			}
			if last {
				c[s.key] = v
				return
			}
			next, ok := c[s.key]
			if !ok || next == nil {
				if steps[i+1].item {
					if i+2 != len(steps) {
						return
					}
					c[s.key] = []any{v}
					return
				}
				next = map[string]any{}
				c[s.key] = next
			}
			cur = next
		case []any:
			idx := findItem(c, s)
			switch {
			case idx >= 0 && last:
				c[idx] = v
				return
			case idx >= 0:
				cur = c[idx]
			case last && s.item:
				appendItem(obj, steps[:i], v)
				return
			default:
				return
			}
		default:
			return
		}
	}
}

// appendItem appends v to the list at steps (every step found).
func appendItem(obj map[string]any, steps []step, v any) {
	path, present, ok := resolve(obj, steps)
	if !ok || !present || len(path) == 0 {
		return
	}
	l, _ := get(obj, path)
	setConcrete(obj, path, append(slices.Clone(l.([]any)), v))
}

// sameJSON compares two values as JSON (numbers of any Go type alike).
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
