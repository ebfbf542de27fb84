package kustomize

import (
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
)

// IgnoreRules turns a Kustomization's spec.ignore into the applier's
// rules; targets match as ssa.SelectorMatcher says. Errors name the rule
// and field ("spec.ignore[<i>].target: ...").
func IgnoreRules(spec []kustomizev1.IgnoreRule) ([]ssa.IgnoreRule, error) {
	var out []ssa.IgnoreRule
	for i, r := range spec {
		rule, err := ssa.NewIgnoreRule(r.Paths, (*ssa.Selector)(r.Target))
		if err != nil {
			return nil, fmt.Errorf("spec.ignore[%d].target: %w", i, err)
		}
		out = append(out, rule)
	}
	return out, nil
}
