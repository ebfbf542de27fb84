// Package normalize applies an Application's spec.ignoreDifferences to the
// objects it compares (argocd-contract §1.10, §6.1): each entry selects
// objects by group and kind globs and exact name and namespace, and names
// fields by JSON pointers, jq path expressions or the field managers that
// own them in the live object's managedFields.
package normalize

import (
	"fmt"
	"slices"

	"github.com/gobwas/glob"
	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// Rules is spec.ignoreDifferences compiled: globs and jq expressions
// parsed once. The zero value and nil ignore nothing. Safe for concurrent
// use.
type Rules struct {
	rules []rule
}

type rule struct {
	group, kind     glob.Glob
	name, namespace string
	pointers        [][]string
	jq              []*gojq.Code
	managers        []string
}

// Compile compiles spec.ignoreDifferences. The error names the entry and
// what is wrong with it: `ignoreDifferences[1]: invalid JSON pointer
// "spec/replicas": must start with "/"`, `ignoreDifferences[0]: invalid
// jqPathExpression ".spec | ": <gojq's message>`, an invalid group or
// kind glob likewise.
func Compile(entries []argov1.ResourceIgnoreDifferences) (*Rules, error) {
	r := &Rules{}
	for i, e := range entries {
		c, err := compileEntry(e)
		if err != nil {
			return nil, fmt.Errorf("ignoreDifferences[%d]: %w", i, err)
		}
		r.rules = append(r.rules, c)
	}
	return r, nil
}

func compileEntry(e argov1.ResourceIgnoreDifferences) (rule, error) {
	c := rule{name: e.Name, namespace: e.Namespace, managers: e.ManagedFieldsManagers}
	var err error
	if c.group, err = glob.Compile(e.Group); err != nil {
		return rule{}, fmt.Errorf("invalid group glob %q: %v", e.Group, err)
	}
	if c.kind, err = glob.Compile(e.Kind); err != nil {
		return rule{}, fmt.Errorf("invalid kind glob %q: %v", e.Kind, err)
	}
	for _, p := range e.JSONPointers {
		tokens, err := parsePointer(p)
		if err != nil {
			return rule{}, fmt.Errorf("invalid JSON pointer %q: %v", p, err)
		}
		c.pointers = append(c.pointers, tokens)
	}
	for _, x := range e.JQPathExpressions {
		code, err := compileJQ(x)
		if err != nil {
			return rule{}, fmt.Errorf("invalid jqPathExpression %q: %v", x, err)
		}
		c.jq = append(c.jq, code)
	}
	return c, nil
}

// matching returns the rules that select u: group and kind globs (`*`
// any run of characters) match u's, name and namespace, when given, equal
// u's. Argo CD matches an entry against the desired object's identity;
// callers pass desired objects with their namespace already defaulted.
func (r *Rules) matching(u *unstructured.Unstructured) []rule {
	if r == nil || u == nil {
		return nil
	}
	gvk := u.GroupVersionKind()
	var out []rule
	for _, c := range r.rules {
		if c.group.Match(gvk.Group) && c.kind.Match(gvk.Kind) &&
			(c.name == "" || c.name == u.GetName()) &&
			(c.namespace == "" || c.namespace == u.GetNamespace()) {
			out = append(out, c)
		}
	}
	return out
}

// managersOf is the union of the matching rules' managedFieldsManagers,
// as Argo CD merges the entries that select one object.
func managersOf(rules []rule) []string {
	var out []string
	for _, c := range rules {
		for _, m := range c.managers {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Apply removes from u, in place, the fields the rules that select u
// ignore, in Argo CD's order: first the fields that a listed manager owns
// in live's metadata.managedFields and that u and live both have (live
// nil: none), then, entry by entry, each jsonPointer and then each
// jqPathExpression's paths, each found in u as the earlier removals left
// it. A removed list item shifts the ones after it. A pointer or an
// expression that selects nothing in u (a missing field, a failed jq
// evaluation) removes nothing. u may be the desired object or a copy of
// the live one (to normalise live, pass a copy as u and live itself).
// Errors: none today; the signature leaves room for one.
func (r *Rules) Apply(u *unstructured.Unstructured, live *unstructured.Unstructured) error {
	rules := r.matching(u)
	if len(rules) == 0 {
		return nil
	}
	removeAll(u.Object, managedPaths(u, live, nil, managersOf(rules)))
	for _, c := range rules {
		for _, tokens := range c.pointers {
			if path, present, ok := resolve(u.Object, keySteps(tokens)); ok && present {
				removeAll(u.Object, [][]any{path})
			}
		}
		for _, code := range c.jq {
			removeAll(u.Object, jqPaths(code, u.Object))
		}
	}
	return nil
}

// ignored is every field of u the rules that select u ignore, as
// concrete paths of u, all found in u as it is (nothing removed between
// them), without duplicates, sorted; a manager's fields only where also
// has them too, when also is not nil. Rules are chosen by sel.
func (r *Rules) ignored(sel, u, live, also *unstructured.Unstructured) [][]any {
	rules := r.matching(sel)
	if len(rules) == 0 {
		return nil
	}
	out := managedPaths(u, live, also, managersOf(rules))
	for _, c := range rules {
		for _, tokens := range c.pointers {
			if path, _, ok := resolve(u.Object, keySteps(tokens)); ok {
				out = append(out, path)
			}
		}
		for _, code := range c.jq {
			out = append(out, jqPaths(code, u.Object)...)
		}
	}
	slices.SortFunc(out, comparePaths)
	return slices.CompactFunc(out, func(a, b []any) bool { return comparePaths(a, b) == 0 })
}

// Paths returns the RFC 6901 pointers (`/spec/replicas`,
// `/spec/template/spec/containers/1/image`, keys escaped with ~0 and ~1)
// of every field of u that the rules selecting u ignore: jsonPointers as
// they resolve in u (list positions, which must exist; a missing map key
// is kept, the pointer then names an absent field), the paths of each
// jqPathExpression in u, and the fields a listed manager owns in live's
// managedFields that u and live both have, with list items (k:{...},
// v:...) turned into u's positions. All are found in u as it is, sorted,
// without duplicates; nil when no rule selects u. They fit pkg/ssa's
// ssa.IgnoreRule{Paths: ...} for Manager.Diff, which blanks the same
// pointers in both the live object and the dry-run result: as the dry-run
// result keeps live's list order, compute them with u = live when the
// live object exists. Errors: none today.
func (r *Rules) Paths(u, live *unstructured.Unstructured) ([]string, error) {
	paths := r.ignored(u, u, live, nil)
	if len(paths) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if s := pointer(p); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// RespectIgnored prepares desired for a sync with RespectIgnoreDifferences
// (argocd-contract §1.9, §1.10): the fields the rules ignore keep their
// live values. It removes the ignored fields from desired and then copies
// into it the live value of each field the rules ignore in live, a list
// item found again in desired by its "name" (or its key or value, for a
// manager's field), a missing item appended. Fields under status are
// never copied (status belongs to the object's own controller). Nothing
// is done when live is nil: a new object is created as Git has it. Errors:
// none today.
func (r *Rules) RespectIgnored(desired, live *unstructured.Unstructured) error {
	if live == nil || len(r.matching(desired)) == 0 {
		return nil
	}
	// Taken before desired loses its fields: a manager's field is kept
	// from live only where desired has it too, as Argo CD keeps only the
	// fields in which the two differ.
	fromLive := r.ignored(desired, live, live, desired)
	removeAll(desired.Object, r.ignored(desired, desired, live, nil))
	for _, p := range fromLive {
		if len(p) == 0 || p[0] == "status" {
			continue
		}
		v, ok := get(live.Object, p)
		if !ok {
			continue
		}
		put(desired.Object, stepsOf(live.Object, p), deepCopy(v))
	}
	return nil
}

func deepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}
