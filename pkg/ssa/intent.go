package ssa

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Intended returns the inventory entries (Meta and Version; Action left
// zero) that ApplyAll gives objs once applied, in objs' order, for an
// applier to record before it applies them: a process killed between the
// apply and its inventory write then leaves no object that the inventory
// does not name, and that a later prune would miss.
//
// The namespace of each entry is scoped as ApplyAll scopes it: cleared on
// a cluster-scoped kind, whether the API server serves the kind already or
// a CustomResourceDefinition of objs declares it (spec.scope). An object
// whose kind neither does is left out: ApplyAll cannot write it before its
// kind exists, and an entry under a guessed namespace could later name a
// live object of the set as stale. The look-ups use the client's REST
// mapper (cached: no request once the kinds are known).
func (m *Manager) Intended(objs []*unstructured.Unstructured) []Change {
	crdScopes := map[schema.GroupKind]bool{} // kind → namespaced
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" && u.GroupVersionKind().Group == "apiextensions.k8s.io" {
			g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
			crdScopes[schema.GroupKind{Group: g, Kind: k}] = scope != "Cluster"
		}
	}
	out := make([]Change, 0, len(objs))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		namespaced, known := crdScopes[gvk.GroupKind()]
		if mapping, err := m.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced, known = mapping.Scope.Name() == apimeta.RESTScopeNameNamespace, true
		}
		if !known {
			continue
		}
		meta := MetaOf(u)
		if !namespaced {
			meta.Namespace = ""
		}
		out = append(out, Change{Meta: meta, Version: gvk.Version})
	}
	return out
}
