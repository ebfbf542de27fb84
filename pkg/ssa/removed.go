package ssa

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// A field removed from the desired object is normally deleted by the
// apply: the applier gives up its ownership and no one else holds it. Some
// fields the API server keeps instead: a Service's `clusterIP: None` (the
// Service storage copies the old cluster IP when the new object has none)
// stays headless, and since the dry-run result then equals the live object
// nothing shows the difference. keptFields finds such fields, and
// serverKeeps decides which of them make the live object differ from what
// the desired object would be.

// ownApplyEntry returns the applier's Apply entry of managed fields (the
// fields of its last applied configuration), or nil.
func ownApplyEntry(entries []metav1.ManagedFieldsEntry, owner string) *metav1.ManagedFieldsEntry {
	for i, e := range entries {
		if e.Manager == owner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && e.FieldsV1 != nil {
			return &entries[i]
		}
	}
	return nil
}

// keptFields returns the fields that the applier owned in live, that it
// no longer owns in the dry-run result dry, and that dry still holds while
// no other field manager owns them. It is nil when the applier's field set
// did not shrink, which is decided by one comparison of bytes: an object
// whose desired state did not change costs nothing more.
func keptFields(live, dry *unstructured.Unstructured, owner string) []fieldpath.Path {
	was, now := ownApplyEntry(live.GetManagedFields(), owner), ownApplyEntry(dry.GetManagedFields(), owner)
	if was == nil || (now != nil && (was.APIVersion != now.APIVersion || bytes.Equal(was.FieldsV1.Raw, now.FieldsV1.Raw))) {
		return nil
	}
	oldSet, newSet := fieldSet(*was), ownedSet(now)
	if oldSet == nil || newSet == nil {
		return nil
	}
	var others []*fieldpath.Set
	for _, e := range dry.GetManagedFields() {
		if e.Manager == owner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			continue
		}
		if s := fieldSet(e); s != nil {
			others = append(others, s)
		}
	}
	var out []fieldpath.Path
	for _, path := range droppedLeaves(oldSet, newSet) {
		// No built-in kind keeps labels or annotations the way it keeps
		// spec fields, and some the server sets from the object itself (a
		// Namespace's kubernetes.io/metadata.name): metadata never counts.
		if fieldName(path[0]) == "metadata" {
			continue
		}
		if _, ok := lookupField(dry.Object, path); !ok {
			continue // deleted by the apply, as it should be
		}
		if !slices.ContainsFunc(others, func(s *fieldpath.Set) bool { return holds(s, path) }) {
			out = append(out, path)
		}
	}
	return out
}

// ownedSet is the field set of the applier's Apply entry e; the API
// server drops an entry that owns nothing, so no entry is the empty set.
func ownedSet(e *metav1.ManagedFieldsEntry) *fieldpath.Set {
	if e == nil {
		return &fieldpath.Set{}
	}
	return fieldSet(*e)
}

// droppedLeaves lists the leaves of the field set old (members without
// members below them) that new does not hold.
func droppedLeaves(old, new *fieldpath.Set) []fieldpath.Path {
	var out []fieldpath.Path
	for p := range old.Leaves().All() {
		if !holds(new, p) {
			out = append(out, p.Copy())
		}
	}
	return out
}

// freshObject returns what the API server makes of desired as a new object:
// a dry-run create under a generated name. It fails where a kind's names
// are fixed (a CRD's `<plural>.<group>`) or the server refuses the create.
func (m *Manager) freshObject(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	f := desired.DeepCopy()
	f.SetGenerateName(desired.GetName() + "-")
	f.SetName("")
	f.SetResourceVersion("")
	f.SetUID("")
	if err := m.Client.Create(ctx, f, client.DryRunAll, client.FieldOwner(m.Owner)); err != nil {
		return nil, err
	}
	return f, nil
}

// serverKeeps returns, rendered like `.spec.clusterIP`, the kept fields
// (see keptFields) whose value in the dry-run result differs from the
// value the API server gives a new object made from desired, learnt with
// a dry-run create. That request is only made when kept fields exist,
// which happens once, on the change that removed them.
//
// The rule, and why: a kept value equal to the new object's is a default
// (`type: ClusterIP`, `sessionAffinity: None` removed) and the live object
// is as Git says. A value the server allocates from a pool (a Service's
// cluster IPs, node ports) differs between any two objects, so a kept
// allocation counts as equal to a fresh one: removing a pinned cluster IP
// or node port keeps the Service; `clusterIP: None` is no allocation and
// differs. A value made from the object's name or uid counts as equal
// when it is the same once the new object's generated name and uid are
// read as the live ones. When the dry-run create cannot be made (a full
// quota, an admission webhook, fixed names) only the fields of
// knownKept are flagged: defaults cannot be told apart then.
func (m *Manager) serverKeeps(ctx context.Context, desired, dry *unstructured.Unstructured, kept []fieldpath.Path) []string {
	fresh, err := m.freshObject(ctx, desired)
	var out []string
	if err != nil {
		for _, path := range kept {
			if v, _ := lookupField(dry.Object, path); knownKept(dry, path, v) {
				out = append(out, fieldPath(dry.Object, path))
			}
		}
		return out
	}
	service := dry.GetKind() == "Service" && dry.GroupVersionKind().Group == ""
	for _, path := range kept {
		have, _ := lookupField(dry.Object, path)
		want, ok := lookupField(fresh.Object, path)
		if ok && (sameJSON(have, want) || sameJSON(have, asLive(want, fresh, dry)) ||
			(service && sameAllocation(fieldName(path[len(path)-1]), have, want))) {
			continue
		}
		out = append(out, fieldPath(dry.Object, path))
	}
	return out
}

// asLive returns v, a value of the new object fresh, with fresh's
// generated name and uid replaced by those of live.
func asLive(v any, fresh, live *unstructured.Unstructured) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	s := string(b)
	if n := fresh.GetName(); n != "" && live.GetName() != "" {
		s = strings.ReplaceAll(s, n, live.GetName())
	}
	if u := string(fresh.GetUID()); u != "" && live.GetUID() != "" {
		s = strings.ReplaceAll(s, u, string(live.GetUID()))
	}
	var out any
	if json.Unmarshal([]byte(s), &out) != nil {
		return v
	}
	return out
}

// knownKept reports whether the value v of the field at path of obj is
// one the API server is known to keep when the field is removed from the
// desired object, and that a new object would not have: a Service's
// `.spec.clusterIP` or `.spec.clusterIPs` of "None" (headless; the
// Service storage copies the old cluster IPs into an update that has
// none, kubernetes pkg/registry/core/service/storage). It is the fallback
// of serverKeeps and what an adopted object is checked against.
func knownKept(obj *unstructured.Unstructured, path fieldpath.Path, v any) bool {
	if obj.GetKind() != "Service" || obj.GroupVersionKind().Group != "" || len(path) != 2 || fieldName(path[0]) != "spec" {
		return false
	}
	switch fieldName(path[1]) {
	case "clusterIP":
		return v == "None"
	case "clusterIPs":
		l, ok := v.([]any)
		return ok && len(l) > 0 && l[0] == "None"
	}
	return false
}

// sameAllocation reports whether a and b are both allocations of a
// Service's field: IP addresses for clusterIP(s), ports for (healthCheck)
// nodePort.
func sameAllocation(field string, a, b any) bool {
	switch field {
	case "clusterIP":
		return isIP(a) && isIP(b)
	case "clusterIPs":
		la, ok1 := a.([]any)
		lb, ok2 := b.([]any)
		if !ok1 || !ok2 || len(la) != len(lb) || len(la) == 0 {
			return false
		}
		for i := range la {
			if !isIP(la[i]) || !isIP(lb[i]) {
				return false
			}
		}
		return true
	case "nodePort", "healthCheckNodePort":
		return isPort(a) && isPort(b)
	}
	return false
}

func isIP(v any) bool {
	s, ok := v.(string)
	return ok && net.ParseIP(s) != nil
}

func isPort(v any) bool {
	var n float64
	b, err := json.Marshal(v)
	return err == nil && json.Unmarshal(b, &n) == nil && n > 0
}

// removedFields lists, rendered by removedPath, the fields the applier
// owned in live (its previous Apply entry, or taken: the fields the
// cleanup hands it) that it does not own in the dry-run or apply result
// res and that res lacks while live has them: the fields the apply
// deletes. A list item deleted whole is listed once, not field by field,
// a map by its keys; values are never listed. It is nil without a change of the
// applier's field set, at no cost.
func removedFields(live, res *unstructured.Unstructured, owner string, taken *fieldpath.Set) []string {
	now := ownApplyEntry(res.GetManagedFields(), owner)
	old := taken
	if old == nil {
		was := ownApplyEntry(live.GetManagedFields(), owner)
		if was == nil || (now != nil && (was.APIVersion != now.APIVersion || bytes.Equal(was.FieldsV1.Raw, now.FieldsV1.Raw))) {
			return nil
		}
		old = fieldSet(*was)
	}
	newSet := ownedSet(now)
	if old == nil || newSet == nil {
		return nil
	}
	var out []string
	for _, path := range absentFields(old, newSet, nil, live.Object, res.Object) {
		out = append(out, removedPath(live.Object, path))
	}
	return out
}

// absentFields walks the field set old against new and returns the
// top-most paths that old holds and new does not, present in live and
// absent from res.
func absentFields(old, new *fieldpath.Set, prefix fieldpath.Path, live, res any) []fieldpath.Path {
	var out []fieldpath.Path
	for _, pe := range elements(old) {
		path := append(prefix[:len(prefix):len(prefix)], pe)
		child, _ := old.Children.Get(pe)
		newChild, inNew := new.Children.Get(pe)
		inNew = inNew || new.Members.Has(pe)
		if _, ok := lookupField(res, path); !ok && (pe.FieldName == nil || child == nil) {
			if _, inLive := lookupField(live, path); inLive && !inNew {
				out = append(out, path)
			}
			continue
		}
		if child != nil {
			if newChild == nil {
				newChild = &fieldpath.Set{}
			}
			out = append(out, absentFields(child, newChild, path, live, res)...)
		}
	}
	return out
}
