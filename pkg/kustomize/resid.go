package kustomize

import (
	"sigs.k8s.io/kustomize/kyaml/resid"
)

func resIDSelector(group, version, kind, name, namespace string) resid.ResId {
	return resid.ResId{Gvk: resid.Gvk{Group: group, Version: version, Kind: kind}, Name: name, Namespace: namespace}
}
