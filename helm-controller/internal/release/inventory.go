package release

import (
	"sort"
	"strings"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	"helm.sh/helm/v3/pkg/chart"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Inventory is the inventory of a release (status.inventory): the objects
// of its manifest and the CRDs of ch (nil for none), as
// `<ns>_<name>_<group>_<kind>` ids sorted. A namespaced object without a
// namespace is in namespace, the release namespace; mapper (nil for none)
// tells which are namespaced. Documents that are not objects are left out.
// Flux compatible.
func Inventory(manifest, namespace string, ch *chart.Chart, mapper apimeta.RESTMapper) *kustomizev1.ResourceInventory {
	inv := &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}}
	seen := map[string]bool{}
	add := func(doc string) {
		if strings.TrimSpace(doc) == "" {
			return
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil || u.GetKind() == "" {
			return
		}
		gvk := u.GroupVersionKind()
		ns := u.GetNamespace()
		if ns == "" && mapper != nil {
			if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == apimeta.RESTScopeNameNamespace {
				ns = namespace
			}
		}
		id := ssa.ObjMeta{Namespace: ns, Name: u.GetName(), GroupKind: schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}}.ID()
		if !seen[id] {
			seen[id] = true
			inv.Entries = append(inv.Entries, kustomizev1.ResourceRef{ID: id, Version: gvk.Version})
		}
	}
	for _, doc := range splitYAML(manifest) {
		add(doc)
	}
	if ch != nil {
		for _, crd := range ch.CRDObjects() {
			for _, doc := range splitYAML(string(crd.File.Data)) {
				add(doc)
			}
		}
	}
	sort.Slice(inv.Entries, func(i, j int) bool { return inv.Entries[i].ID < inv.Entries[j].ID })
	return inv
}

// splitYAML splits s at its `---` lines.
func splitYAML(s string) []string {
	var docs []string
	cur := []string{}
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = cur[:0]
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}
