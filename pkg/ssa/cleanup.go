package ssa

import (
	"encoding/json"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// lastAppliedAnnotation is kubectl's client-side apply record.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Metadata that earlier tools left and the cleanup removes. Flux compatible
// (contract §4.3): kubectl's client-side apply record and Flux v1's marks.
var (
	staleAnnotations = []string{lastAppliedAnnotation, "kustomize.toolkit.fluxcd.io/checksum", "fluxcd.io/sync-checksum"}
	staleLabels      = []string{"fluxcd.io/sync-gc-mark"}
)

// replacedManager reports whether a managed-fields entry is one whose fields
// the applier takes over. Flux compatible: managers named `kubectl*`
// (kubectl, kubectl-edit, kubectl-patch, kubectl-client-side-apply; Apply
// and Update), `before-first-apply*` (Update) and exactly the applier's own
// Update entries; with m.KeepManagers only the last (e.g. Argo CD's
// client-side apply as argocd-controller, whose fields a migrated object
// still holds).
func (m *Manager) replacedManager(e metav1.ManagedFieldsEntry) bool {
	if e.Subresource != "" {
		return false
	}
	switch {
	case e.Manager == m.Owner:
		return e.Operation == metav1.ManagedFieldsOperationUpdate
	case m.KeepManagers:
		return false
	case strings.HasPrefix(e.Manager, "kubectl"):
		return e.Operation == metav1.ManagedFieldsOperationApply || e.Operation == metav1.ManagedFieldsOperationUpdate
	case strings.HasPrefix(e.Manager, "before-first-apply"):
		return e.Operation == metav1.ManagedFieldsOperationUpdate
	}
	return false
}

// cleanupPatch returns the JSON patch that hands the fields of kubectl and
// before-first-apply to the applier's Apply entry and drops stale metadata
// from live, or nil when there is nothing to clean or the desired object
// is annotated `ssa: Merge`. After it, a field removed from Git is removed
// from the object even if kubectl set it first (unless m.KeepManagers).
// taken is the field set handed over.
func (m *Manager) cleanupPatch(desired, live *unstructured.Unstructured) (patch []byte, taken *fieldpath.Set) {
	if live == nil || flag(desired, SSAAnnotation) == "merge" {
		return nil, nil
	}
	// The patch applies only to the object as planned: a write in between
	// fails the test rather than losing another manager's entry.
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()}}
	entries := live.GetManagedFields()
	var kept []metav1.ManagedFieldsEntry
	taken = &fieldpath.Set{}
	replaced := false
	for _, e := range entries {
		if !m.replacedManager(e) {
			kept = append(kept, e)
			continue
		}
		replaced = true
		if set := fieldSet(e); set != nil {
			taken = taken.Union(set)
		}
	}
	if replaced {
		own := -1
		for i, e := range kept {
			if e.Manager == m.Owner && e.Operation == metav1.ManagedFieldsOperationApply {
				own = i
				break
			}
		}
		if own < 0 {
			kept = append(kept, metav1.ManagedFieldsEntry{Manager: m.Owner, Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: live.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte("{}")}})
			own = len(kept) - 1
		}
		set := fieldSet(kept[own])
		if set == nil {
			set = &fieldpath.Set{}
		}
		raw, err := set.Union(taken).ToJSON()
		if err != nil {
			return nil, nil
		}
		kept[own].FieldsV1 = &metav1.FieldsV1{Raw: raw}
		ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/managedFields", "value": kept})
	}
	for _, a := range staleAnnotations {
		if _, ok := live.GetAnnotations()[a]; ok {
			ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + escapePointer(a)})
		}
	}
	for _, l := range staleLabels {
		if _, ok := live.GetLabels()[l]; ok {
			ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/" + escapePointer(l)})
		}
	}
	if len(ops) == 1 {
		return nil, nil
	}
	patch, _ = json.Marshal(ops)
	return patch, taken
}

// takenRemoved lists, rendered by removedPath, the fields of taken
// (handed over by the cleanup) that the apply deleted: present in live,
// not in the applier's field set of the apply result res and absent from
// it. The stale metadata the cleanup drops itself is bookkeeping and not
// listed.
func (m *Manager) takenRemoved(live, res *unstructured.Unstructured, taken *fieldpath.Set) []string {
	if taken == nil || taken.Empty() {
		return nil
	}
	stale := map[string]bool{}
	for _, a := range staleAnnotations {
		stale[".metadata.annotations."+a] = true
	}
	for _, l := range staleLabels {
		stale[".metadata.labels."+l] = true
	}
	var out []string
	for _, p := range removedFields(live, res, m.Owner, taken) {
		if !stale[p] {
			out = append(out, p)
		}
	}
	return out
}

// takenKept lists, rendered like `.spec.clusterIP`, the fields of taken
// that the applier's field set of the dry-run result dry lacks, that no
// manager the cleanup keeps holds, and whose live value the API server is
// known to keep (knownKept): applying would leave them as they are.
func (m *Manager) takenKept(live, dry *unstructured.Unstructured, taken *fieldpath.Set) []string {
	if taken == nil || taken.Empty() {
		return nil
	}
	newSet := ownedSet(ownApplyEntry(dry.GetManagedFields(), m.Owner))
	if newSet == nil {
		return nil
	}
	var out []string
next:
	for _, path := range droppedLeaves(taken, newSet) {
		v, ok := lookupField(live.Object, path)
		if !ok || !knownKept(live, path, v) {
			continue
		}
		for _, e := range live.GetManagedFields() {
			if m.replacedManager(e) || (e.Manager == m.Owner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "") {
				continue
			}
			if s := fieldSet(e); s != nil && holds(s, path) {
				continue next
			}
		}
		out = append(out, fieldPath(live.Object, path))
	}
	return out
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
