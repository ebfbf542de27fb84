package ssa

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helpers of the applier that drift detection outside ApplyAll (the
// helm-controller's release drift) shares.

// WithoutIgnored returns a copy of each of objs without the fields (JSON
// pointers) of the rules that match desired, for a comparison; objs are
// not modified. An ignored list item is blanked (null), not removed, so the
// items after it keep their positions.
func WithoutIgnored(rules []IgnoreRule, desired *unstructured.Unstructured, objs ...*unstructured.Unstructured) []*unstructured.Unstructured {
	paths := ignoredPaths(rules, desired)
	out := make([]*unstructured.Unstructured, len(objs))
	for i, u := range objs {
		out[i] = withoutPaths(u, paths)
	}
	return out
}

// Absent reports whether the field is missing from the desired object, and
// whether it is missing from the live one.
func (f FieldDrift) Absent() (desired, live bool) { return f.desiredAbsent, f.liveAbsent }

// NormalizeSecret moves a core Secret's stringData into data (base64),
// as ApplyAll does before it applies; other objects are left alone.
func NormalizeSecret(u *unstructured.Unstructured) { normalizeSecret(u) }

// SortObjects orders objects as ApplyAll applies them: by stage, kind
// order, namespace and name. Flux compatible (ReconcileOrder).
func SortObjects(objs []*unstructured.Unstructured) { sortObjects(objs) }

// DryRun plans one desired object as ApplyAll would and writes nothing:
// the action ApplyAll would take (Created, Configured, Unchanged, Skipped
// or Replaced) and, for an existing object, every field in which the API
// server's dry-run result differs from the live object, whoever set it
// (fields of opts.Ignore left out; Secret values masked). u is not
// modified. The error is ApplyAll's dry-run error ("<Kind>/<ns>/<name>
// dry-run failed: <reason>"). Used by `eddy diff kustomization`.
func (m *Manager) DryRun(ctx context.Context, u *unstructured.Unstructured, opts ApplyOptions) (Action, []FieldDrift, error) {
	p, err := m.plan(ctx, u.DeepCopy(), opts)
	if err != nil {
		return "", nil, err
	}
	if p.action == Skipped || p.action == Created || p.cmpLive == nil || p.cmpDry == nil {
		return p.action, nil, nil
	}
	return p.action, Diff(p.cmpLive, p.cmpDry), nil
}
