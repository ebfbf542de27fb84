package release

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInventoryOfManifestAndCRDs: the inventory lists the manifest's
// objects and the chart's CRDs once each, sorted; a namespaced object
// without a namespace is in the release namespace, a cluster-scoped one in
// none; documents that are not objects are left out.
func TestInventoryOfManifestAndCRDs(t *testing.T) {
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, apimeta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, apimeta.RESTScopeRoot)
	manifest := "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n" +
		"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n---\n# only a comment\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app"}, Files: []*chart.File{{Name: "crds/crd.yaml",
		Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n")}}}
	inv := Inventory(manifest, "apps", ch, mapper)
	var ids []string
	for _, e := range inv.Entries {
		ids = append(ids, e.ID+" "+e.Version)
	}
	want := []string{
		"_extra__Namespace v1",
		"_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition v1",
		"apps_app__ConfigMap v1",
	}
	if len(ids) != len(want) {
		t.Fatalf("inventory %q, want %q", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("entry %d %q, want %q", i, ids[i], want[i])
		}
	}
}
