package ssa

import (
	"context"
	"crypto/sha256"
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
	// memoKey and digest key the object in the memo; memoOK: it may be
	// remembered (a built-in kind whose digest could be taken).
	memoKey string
	digest  [sha256.Size]byte
	memoOK  bool
}

// plan dry-runs the desired object and reads the live one. An object
// the memo may know, one with ignored fields (whose removal depends on the
// live object) or one applied only if absent is read first; any other is
// dry-run first and read only when the dry-run's answer shows it exists
// (a resourceVersion): a new object costs one request, not two. pre, when
// set, holds the digest and the live object prefetch found.
func (m *Manager) plan(ctx context.Context, u *unstructured.Unstructured, opts ApplyOptions, pre *prefetched) (*planned, error) {
	if err := m.scopeNamespace(u); err != nil {
		return nil, err
	}
	p := &planned{obj: u}
	if flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
		p.action = Skipped
		return p, nil
	}
	ignored := ignoredPaths(opts.Ignore, u)
	digested := len(ignored) == 0 && flag(u, SSAAnnotation) != "ifnotpresent"
	if digested {
		normalizeSecret(u)
		if pre != nil && pre.digested {
			p.memoKey, p.digest, p.memoOK = pre.memoKey, pre.digest, pre.memoOK
		} else {
			m.digest(p, u, nil)
		}
		if !p.memoOK || !m.Memo.known(p.memoKey, p.digest) {
			return p, m.planDryRunFirst(ctx, p, opts)
		}
	}
	live := pre.listed()
	if live == nil {
		var err error
		if live, err = m.readLive(ctx, u); err != nil {
			return nil, err
		}
	}
	p.live = live
	// Flux compatible: the flags count on the live object too, so an
	// object can be paused in the cluster during an incident.
	if live != nil && (flag(u, SSAAnnotation) == "ifnotpresent" || skippedLive(live)) {
		p.action = Skipped
		return p, nil
	}
	normalizeSecret(u)
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
	if !digested {
		m.digest(p, u, ignored)
	}
	if p.memoOK && m.Memo.unchanged(p.memoKey, live, p.digest) {
		p.action = Unchanged
		return p, nil
	}
	defer m.remember(p)
	return p, m.dryRun(ctx, p, u, ignored, opts)
}

// digest keys p in the memo by u, the desired object as dry-run.
func (m *Manager) digest(p *planned, u *unstructured.Unstructured, ignored [][]string) {
	p.memoKey = m.MemoScope + "\x00" + MetaOf(u).String()
	p.digest, p.memoOK = desiredDigest(u, m.MemoScope, ignored)
	p.memoOK = p.memoOK && memoizable(u.GroupVersionKind())
}

// planDryRunFirst is plan for an object without ignored fields that the
// memo does not know: the dry-run first, then the live object when the
// dry-run shows one (or failed: a live object may be paused, or be
// recreated with force).
func (m *Manager) planDryRunFirst(ctx context.Context, p *planned, opts ApplyOptions) error {
	defer m.remember(p)
	u := p.obj
	d, err := m.diff(ctx, u, nil, nil)
	if err == nil && d.Dry.GetResourceVersion() == "" {
		return m.settle(ctx, p, u, d, nil, opts)
	}
	live, gerr := m.readLive(ctx, u)
	if gerr != nil {
		return gerr
	}
	if live != nil && skippedLive(live) {
		p.live, p.action = live, Skipped
		return nil
	}
	p.live = live
	if d != nil {
		d.Live, d.CmpLive = live, live
	}
	return m.settle(ctx, p, u, d, err, opts)
}

// readLive reads the live object of u; nil when there is none.
func (m *Manager) readLive(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := m.Client.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s dry-run failed: %s", MetaOf(u), reason(err))
	}
	return live, nil
}

// skippedLive tells whether the live object is paused in the cluster.
func skippedLive(live *unstructured.Unstructured) bool {
	return flag(live, ReconcileAnnotation) == "disabled" || flag(live, SSAAnnotation) == "ignore"
}

// remember records in the memo a plan that found its object Unchanged
// (and needs no cleanup nor recreation), and forgets any other.
func (m *Manager) remember(p *planned) {
	if !p.memoOK {
		return
	}
	if p.action == Unchanged && p.cleanup == nil && !p.recreate {
		m.Memo.record(p.memoKey, p.live, p.digest)
	} else {
		m.Memo.forget(p.memoKey)
	}
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
	d, err := m.diff(ctx, u, p.live, ignored)
	return m.settle(ctx, p, u, d, err, opts)
}

// settle sets p's action, drift, removed fields and cleanup from the
// dry-run's answer d (or its error err) against p.live.
func (m *Manager) settle(ctx context.Context, p *planned, u *unstructured.Unstructured, d *ObjectDiff, err error, opts ApplyOptions) error {
	live := p.live
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
