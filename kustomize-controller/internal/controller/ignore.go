package controller

import (
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
)

// ignoreRules turns spec.ignore into the applier's rules; targets match as
// ssa.SelectorMatcher says. Errors name the rule and field.
func ignoreRules(spec []kustomizev1.IgnoreRule) ([]ssa.IgnoreRule, error) {
	var out []ssa.IgnoreRule
	for i, r := range spec {
		rule := ssa.IgnoreRule{Paths: r.Paths}
		if t := r.Target; t != nil {
			m, err := ssa.SelectorMatcher(t)
			if err != nil {
				return nil, fmt.Errorf("spec.ignore[%d].target: %w", i, err)
			}
			rule.Match = m
		}
		out = append(out, rule)
	}
	return out, nil
}
