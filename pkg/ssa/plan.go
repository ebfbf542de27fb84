package ssa

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// planned is one object of a set after its dry-run: what apply will do.
type planned struct {
	obj      *unstructured.Unstructured
	live     *unstructured.Unstructured
	action   Action
	drift    []FieldDrift
	removed  []string
	recreate bool
	dry      *unstructured.Unstructured // the dry-run result, when the cleanup hands fields (taken) to the applier
	taken    *fieldpath.Set
	cleanup  []byte // JSON patch of managed fields and stale metadata, written before the apply
	// cmpLive and cmpDry are the live object and the dry-run result as
	// compared (ignored fields left out), for DryRun.
	cmpLive, cmpDry *unstructured.Unstructured
}

// plan reads the live object and dry-runs the desired one.
func (m *Manager) plan(ctx context.Context, u *unstructured.Unstructured, opts ApplyOptions) (*planned, error) {
	if err := m.scopeNamespace(u); err != nil {
		return nil, err
	}
	id := MetaOf(u).String()
	p := &planned{obj: u}
	if flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
		p.action = Skipped
		return p, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := m.Client.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("%s dry-run failed: %s", id, reason(err))
	}
	p.live = live
	// Flux compatible: the flags count on the live object too, so an
	// object can be paused in the cluster during an incident.
	if live != nil && (flag(u, SSAAnnotation) == "ifnotpresent" ||
		flag(live, ReconcileAnnotation) == "disabled" || flag(live, SSAAnnotation) == "ignore") {
		p.action = Skipped
		return p, nil
	}
	normalizeSecret(u)
	ignored := ignoredPaths(opts.Ignore, u)
	if live != nil && len(ignored) > 0 {
		for _, path := range ignored {
			if field, ok := ownedByOther(live.GetManagedFields(), m.Owner, path, live.Object); ok {
				if p.obj == u {
					p.obj = u.DeepCopy()
				}
				removeField(p.obj.Object, field)
			}
		}
		u = p.obj
	}
	memoKey := m.MemoScope + "\x00" + id
	digest, digestOK := desiredDigest(u, m.MemoScope, ignored)
	digestOK = digestOK && memoizable(u.GroupVersionKind())
	if digestOK && m.Memo.unchanged(memoKey, live, digest) {
		p.action = Unchanged
		return p, nil
	}
	defer func() {
		if p.action == Unchanged && p.cleanup == nil && !p.recreate && digestOK {
			m.Memo.record(memoKey, live, digest)
		} else {
			m.Memo.forget(memoKey)
		}
	}()
	if err := m.dryRun(ctx, p, u, ignored, opts); err != nil {
		return nil, err
	}
	return p, nil
}

// scopeNamespace clears the namespace of a cluster-scoped object: kustomize
// sets namespaces on kinds it does not know; a cluster-scoped object keeps
// none, so its inventory id and messages are right. A namespaced object
// without one is an error.
func (m *Manager) scopeNamespace(u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	mapping, err := m.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	switch namespaced := mapping.Scope.Name() == apimeta.RESTScopeNameNamespace; {
	case !namespaced && u.GetNamespace() != "":
		u.SetNamespace("")
	case namespaced && u.GetNamespace() == "":
		// Flux compatible: no default namespace is guessed; the
		// Kustomization's targetNamespace or the manifest must set one.
		return fmt.Errorf("%s namespace not specified", MetaOf(u))
	}
	return nil
}

// dryRun dry-runs u (p.obj less the fields other managers own) against
// p.live (Manager.Diff) and sets p's action, drift, removed fields and cleanup.
func (m *Manager) dryRun(ctx context.Context, p *planned, u *unstructured.Unstructured, ignored [][]string, opts ApplyOptions) error {
	live := p.live
	d, err := m.diff(ctx, u, live, ignored)
	if err != nil {
		if live != nil && isImmutable(err) && (opts.Force || flag(u, ForceAnnotation) == "enabled") {
			p.action, p.recreate = Created, true
			return nil
		}
		return fmt.Errorf("%s dry-run failed: %s", MetaOf(u), reason(err))
	}
	dry, cmpLive, cmpDry := d.Dry, d.CmpLive, d.CmpDry
	p.cmpLive, p.cmpDry = cmpLive, cmpDry
	switch {
	case live == nil:
		p.action = Created
	case equalObjects(cmpLive, cmpDry):
		p.action = Unchanged
	default:
		p.action = Configured
		p.drift = m.drift(cmpLive, cmpDry, live)
		p.removed = removedFields(live, dry, m.Owner, nil)
		sort.Strings(p.removed)
	}
	if p.cleanup, p.taken = m.cleanupPatch(u, live); p.cleanup != nil {
		if p.action == Unchanged {
			p.action = Configured
		}
		p.dry = dry
	}
	if live != nil {
		return m.planKept(ctx, p, u, dry, opts)
	}
	return nil
}

// drift lists the fields of a Configured object that are drift: a value
// another field manager wrote over one the applier had applied. The
// applier's own values differ only because Git changed, and a field the
// live object lacks cannot be told from one Git added. An object that holds
// no Apply entry of the applier and still carries kubectl's
// last-applied-configuration (which the applier's first apply removes) was
// never applied by it: adopting it is no drift.
func (m *Manager) drift(cmpLive, cmpDry, live *unstructured.Unstructured) []FieldDrift {
	_, kubectlApplied := live.GetAnnotations()[lastAppliedAnnotation]
	applied := ownApplyEntry(live.GetManagedFields(), m.Owner) != nil || !kubectlApplied
	var out []FieldDrift
	// Fields only the live object has are the ones Git removed (listed
	// from the field sets) or another manager's: no drift.
	for _, d := range DiffFields(cmpLive, cmpDry) {
		if applied && !d.desiredAbsent && !d.liveAbsent && d.Manager != "" && d.Manager != m.Owner {
			out = append(out, d)
		}
	}
	return out
}

// planKept finds the fields removed from the desired object that the API
// server keeps; the object is then recreated (Replaced) with force, and
// the set fails without it, or for a Namespace.
func (m *Manager) planKept(ctx context.Context, p *planned, u, dry *unstructured.Unstructured, opts ApplyOptions) error {
	live := p.live
	var fields []string
	if kept := keptFields(live, dry, m.Owner); len(kept) > 0 {
		// Written even when nothing else changed, so the applier's
		// ownership of the removed fields ends and the next reconcile
		// does not look at them again.
		if p.action == Unchanged {
			p.action = Configured
		}
		fields = m.serverKeeps(ctx, u, dry, kept)
	}
	// An adopted object: fields kubectl set that the API server keeps
	// once the applier, which takes them over, drops them. Only the
	// known ones (knownKept), which costs no request.
	fields = append(fields, m.takenKept(live, dry, p.taken)...)
	if len(fields) == 0 {
		return nil
	}
	sort.Strings(fields)
	fields = slices.Compact(fields)
	id := MetaOf(u).String()
	if live.GetKind() == "Namespace" && live.GroupVersionKind().Group == "" {
		// Recreating a Namespace deletes everything in it.
		return fmt.Errorf("%s dry-run failed: %s removed from the desired state but kept by the API server; "+
			"a Namespace is not recreated: set the field in the desired state",
			id, strings.Join(fields, ", "))
	}
	if !opts.Force && flag(u, ForceAnnotation) != "enabled" {
		return fmt.Errorf("%s dry-run failed: %s removed from the desired state but kept by the API server; "+
			"the object must be recreated: enable force (spec.force or the %s: enabled annotation)",
			id, strings.Join(fields, ", "), ForceAnnotation)
	}
	p.action, p.recreate = Replaced, true
	return nil
}

// equalObjects compares a live object with a dry-run result: labels,
// annotations and everything outside metadata and status. Flux compatible.
func equalObjects(live, dry *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(comparable(live), comparable(dry))
}

func comparable(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	if l := u.GetLabels(); len(l) > 0 {
		out["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		out["annotations"] = a
	}
	return out
}

func isImmutable(err error) bool {
	if !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) && !apierrors.IsForbidden(err) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "immutable") || strings.Contains(msg, "cannot change") || strings.Contains(msg, "may not change")
}
