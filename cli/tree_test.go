package main

import (
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
