package controller

import (
	"fmt"
	"regexp"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// ignoreRules turns spec.ignore into the applier's rules. A target's group,
// version, kind, namespace and name are anchored regular expressions and its
// selectors label-selector expressions, as in kustomize's patch targets.
// Errors name the rule and field.
func ignoreRules(spec []kustomizev1.IgnoreRule) ([]ssa.IgnoreRule, error) {
	var out []ssa.IgnoreRule
	for i, r := range spec {
		rule := ssa.IgnoreRule{Paths: r.Paths}
		if t := r.Target; t != nil {
			m, err := targetMatcher(t)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].target: %w", i, err)
			}
			rule.Match = m
		}
		out = append(out, rule)
	}
	return out, nil
}

func targetMatcher(t *kustomizev1.Selector) (func(*unstructured.Unstructured) bool, error) {
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
