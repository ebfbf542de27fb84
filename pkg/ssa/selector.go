package ssa

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Selector selects objects: the target of an ignore rule (a Kustomization's
// spec.ignore, a HelmRelease's driftDetection.ignore). Its fields are those
// of the APIs' Selector, in the same order, so that a caller converts one
// with (*ssa.Selector)(t).
type Selector struct {
	// Group, Version, Kind, Namespace and Name are anchored regular
	// expressions; empty matches everything.
	Group, Version, Kind, Namespace, Name string
	// AnnotationSelector and LabelSelector are label-selector expressions
	// over the object's annotations and labels; empty matches everything.
	AnnotationSelector, LabelSelector string
}

// NewIgnoreRule is the rule that leaves paths (RFC 6901 pointers) out of
// the objects target selects, every object when target is nil. The error
// is SelectorMatcher's.
func NewIgnoreRule(paths []string, target *Selector) (IgnoreRule, error) {
	rule := IgnoreRule{Paths: paths}
	if target != nil {
		m, err := SelectorMatcher(*target)
		if err != nil {
			return IgnoreRule{}, err
		}
		rule.Match = m
	}
	return rule, nil
}

// SelectorMatcher returns a matcher for an ignore rule's target: the
// group, version, kind, namespace and name are anchored regular
// expressions, the selectors label-selector expressions over the object's
// labels and annotations, as in kustomize's patch targets and Flux's
// jsondiff. Empty fields match everything. Errors name the field
// ("kind: invalid regular expression ...", "labelSelector: ...").
func SelectorMatcher(t Selector) (func(*unstructured.Unstructured) bool, error) {
	type field struct {
		name, expr string
		get        func(*unstructured.Unstructured) string
	}
	fields := []field{
		{"group", t.Group, func(u *unstructured.Unstructured) string { return u.GroupVersionKind().Group }},
		{"version", t.Version, func(u *unstructured.Unstructured) string { return u.GroupVersionKind().Version }},
		{"kind", t.Kind, func(u *unstructured.Unstructured) string { return u.GetKind() }},
		{"namespace", t.Namespace, func(u *unstructured.Unstructured) string { return u.GetNamespace() }},
		{"name", t.Name, func(u *unstructured.Unstructured) string { return u.GetName() }},
	}
	type matcher struct {
		re  *regexp.Regexp
		get func(*unstructured.Unstructured) string
	}
	var ms []matcher
	for _, f := range fields {
		if f.expr == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + f.expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s: invalid regular expression %q", f.name, f.expr)
		}
		ms = append(ms, matcher{re, f.get})
	}
	var ls, as labels.Selector
	var err error
	if t.LabelSelector != "" {
		if ls, err = labels.Parse(t.LabelSelector); err != nil {
			return nil, fmt.Errorf("labelSelector: %v", err)
		}
	}
	if t.AnnotationSelector != "" {
		if as, err = labels.Parse(t.AnnotationSelector); err != nil {
			return nil, fmt.Errorf("annotationSelector: %v", err)
		}
	}
	return func(u *unstructured.Unstructured) bool {
		for _, m := range ms {
			if !m.re.MatchString(m.get(u)) {
				return false
			}
		}
		if ls != nil && !ls.Matches(labels.Set(u.GetLabels())) {
			return false
		}
		return as == nil || as.Matches(labels.Set(u.GetAnnotations()))
	}, nil
}
