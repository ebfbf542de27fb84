package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// helmStorage encodes a release record as Helm's Secret storage driver
// does: JSON, gzipped, base64 (the Secret's "release" value).
func helmStorage(t *testing.T, manifest string) []byte {
	t.Helper()
	js, err := json.Marshal(map[string]any{"name": "app", "version": 2, "namespace": "apps", "manifest": manifest})
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(js)
	_ = w.Close()
	return []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))
}

func TestDecodeHelmRelease(t *testing.T) {
	manifest := "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n" +
		"---\n# Source: app/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: other\n---\n"
	objs, err := decodeHelmRelease(helmStorage(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, ssa.MetaOf(o).String())
	}
	if want := []string{"ServiceAccount/app", "Deployment/other/app"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("objects %v, want %v", got, want)
	}
	if _, err := decodeHelmRelease([]byte("not base64!")); err == nil {
		t.Error("bad release data decoded")
	}
}

func TestTreePrint(t *testing.T) {
	m := func(kind, ns, name string) ssa.ObjMeta {
		return ssa.ObjMeta{Namespace: ns, Name: name, GroupKind: schema.GroupKind{Kind: kind}}
	}
	root := &treeNode{Resource: m("Kustomization", "flux-system", "flux-system")}
	root.add(m("Namespace", "", "apps"))
	hr := root.add(m("HelmRelease", "apps", "app"))
	hr.add(m("ServiceAccount", "apps", "app"))
	hr.add(m("Deployment", "apps", "app"))
	root.add(m("Kustomization", "flux-system", "infra")).add(m("ConfigMap", "apps", "c"))
	want := `Kustomization/flux-system/flux-system
├── Namespace/apps
├── HelmRelease/apps/app
│   ├── ServiceAccount/apps/app
│   └── Deployment/apps/app
└── Kustomization/flux-system/infra
    └── ConfigMap/apps/c
`
	if got := root.print(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
