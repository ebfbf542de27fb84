package ssa

import (
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
)

// SpecIgnoreRules turns a Kustomization's spec.ignore into the applier's
// rules; targets match as SelectorMatcher says. Errors name the rule and
// field ("spec.ignore[<i>].target: ...").
func SpecIgnoreRules(spec []kustomizev1.IgnoreRule) ([]IgnoreRule, error) {
	var out []IgnoreRule
	for i, r := range spec {
		rule := IgnoreRule{Paths: r.Paths}
		if t := r.Target; t != nil {
			m, err := SelectorMatcher(t)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].target: %w", i, err)
			}
			rule.Match = m
		}
		out = append(out, rule)
	}
	return out, nil
}
