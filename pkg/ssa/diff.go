package ssa

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FieldDrift is one field in which a live object differs from the desired one.
type FieldDrift struct {
	// Path like `.data.FEATURE_X` or `.spec.template.spec.containers[0].image`.
	Path string
	// Desired and Live are the values as JSON ("" when absent); Secret
	// values are masked.
	Desired, Live string
	// Manager is the field manager that last wrote the live value, read from
	// managedFields; empty when unknown.
	Manager string

	segments                  []segment
	desiredAbsent, liveAbsent bool
}

// String renders `<path> "<desired>" → "<live>" (by <manager>)`.
func (f FieldDrift) String() string {
	s := fmt.Sprintf("%s %s → %s", f.Path, f.Desired, f.Live)
	if f.Manager != "" {
		s += " (by " + f.Manager + ")"
	}
	return s
}

// Diff lists the fields in which live differs from desired (a dry-run
// result), with the manager of each live value. Metadata other than labels
// and annotations, and status, are not compared.
func Diff(live, desired *unstructured.Unstructured) []FieldDrift {
	var out []FieldDrift
	walkDiff("", nil, comparableForDiff(desired), comparableForDiff(live), &out)
	secret := live.GetKind() == "Secret" && live.GroupVersionKind().Group == ""
	managers := live.GetManagedFields()
	for i := range out {
		if secret && (strings.HasPrefix(out[i].Path, ".data") || strings.HasPrefix(out[i].Path, ".stringData")) {
			out[i].Desired, out[i].Live = mask(out[i].Desired), mask(out[i].Live)
		}
		out[i].Manager = managerOf(managers, out[i].segments, live.Object)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func mask(v string) string {
	if v == "" {
		return v
	}
	return `"***"`
}

func comparableForDiff(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	md := map[string]any{}
	if l := u.GetLabels(); len(l) > 0 {
		md["labels"] = toAny(l)
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		md["annotations"] = toAny(a)
	}
	if len(md) > 0 {
		out["metadata"] = md
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// walkDiff appends the leaves where desired and live differ. segs is path
// split into fields and indices (a key may hold dots: label keys do).
func walkDiff(path string, segs []segment, desired, live any, out *[]FieldDrift) {
	if equality.Semantic.DeepEqual(desired, live) {
		return
	}
	dm, dok := desired.(map[string]any)
	lm, lok := live.(map[string]any)
	// A map on one side only is walked against an empty one, so the
	// leaves added or removed are listed one by one.
	if dok && live == nil {
		lm, lok = map[string]any{}, true
	}
	if lok && desired == nil {
		dm, dok = map[string]any{}, true
	}
	if dok && lok {
		keys := map[string]bool{}
		for k := range dm {
			keys[k] = true
		}
		for k := range lm {
			keys[k] = true
		}
		for k := range keys {
			walkDiff(path+"."+k, append(segs[:len(segs):len(segs)], segment{field: k, index: -1}), dm[k], lm[k], out)
		}
		return
	}
	ds, dok := desired.([]any)
	ls, lok := live.([]any)
	if dok && lok && len(ds) == len(ls) {
		for i := range ds {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), append(segs[:len(segs):len(segs)], segment{index: i}), ds[i], ls[i], out)
		}
		return
	}
	*out = append(*out, FieldDrift{Path: path, Desired: render(desired), Live: render(live), segments: segs,
		desiredAbsent: desired == nil, liveAbsent: live == nil})
}

func render(v any) string {
	if v == nil {
		return "<absent>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

type segment struct {
	field string
	index int // -1 for fields
}
