package normalize

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/itchyny/gojq"
)

// jqTimeout bounds one expression on one object, Argo CD's default
// (one second), so that a runaway expression cannot stall a reconcile.
const jqTimeout = time.Second

// compileJQ compiles `path(expr)`, whose results are the paths expr
// selects, as Argo CD's `del(expr)` deletes them. The error is gojq's.
func compileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse("path(" + expr + ")")
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q)
}

// jqPaths runs code on obj and returns the concrete paths it yields, each
// list position made non-negative. An expression that fails on this
// object (iterating over a missing list, a timeout) selects nothing, as
// Argo CD skips a normalisation that does not apply; results that are not
// paths of keys and positions (slices) are left out.
func jqPaths(code *gojq.Code, obj map[string]any) [][]any {
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	input := toJQ(obj)
	var out [][]any
	iter := code.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return out
		}
		if _, isErr := v.(error); isErr {
			return nil
		}
		raw, ok := v.([]any)
		if !ok {
			continue
		}
		if path, ok := concrete(input, raw); ok {
			out = append(out, path)
		}
	}
}

// concrete checks a jq path against obj: string keys and int positions,
// negative positions counted from the list's end.
func concrete(obj any, raw []any) ([]any, bool) {
	path := make([]any, 0, len(raw))
	cur := obj
	for _, t := range raw {
		if f, ok := t.(float64); ok {
			if f != math.Trunc(f) {
				return nil, false
			}
			t = int(f)
		}
		switch v := t.(type) {
		case string:
			path = append(path, v)
			m, _ := cur.(map[string]any)
			cur = m[v]
		case int:
			l, _ := cur.([]any)
			if v < 0 {
				v += len(l)
			}
			if v < 0 {
				return nil, false
			}
			path = append(path, v)
			if v < len(l) {
				cur = l[v]
			} else {
				cur = nil
			}
		default:
			return nil, false
		}
	}
	return path, true
}

// toJQ copies an unstructured value into the types gojq takes (int, not
// int64 or int32).
func toJQ(v any) any {
	switch c := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, e := range c {
			m[k] = toJQ(e)
		}
		return m
	case []any:
		l := make([]any, len(c))
		for i, e := range c {
			l[i] = toJQ(e)
		}
		return l
	case int64:
		return int(c)
	case int32:
		return int(c)
	case float32:
		return float64(c)
	case nil, bool, int, float64, string:
		return c
	default:
		return fmt.Sprint(c)
	}
}
