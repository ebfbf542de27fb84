package ssa

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/object"
)

// ObjMeta identifies an object across API versions.
type ObjMeta struct {
	Namespace, Name string
	GroupKind       schema.GroupKind
}

// ID is the inventory id `<namespace>_<name>_<group>_<kind>`, the string
// of cli-utils' ObjMetadata, as Flux writes it: ':' in the names of RBAC
// kinds is written "__".
func (o ObjMeta) ID() string {
	return object.ObjMetadata{Namespace: o.Namespace, Name: o.Name, GroupKind: o.GroupKind}.String()
}

// String is `Kind/namespace/name`, or `Kind/name` for cluster-scoped objects.
func (o ObjMeta) String() string {
	if o.Namespace == "" {
		return o.GroupKind.Kind + "/" + o.Name
	}
	return o.GroupKind.Kind + "/" + o.Namespace + "/" + o.Name
}

// MetaOf returns the identity of an object.
func MetaOf(u *unstructured.Unstructured) ObjMeta {
	return ObjMeta{Namespace: u.GetNamespace(), Name: u.GetName(), GroupKind: u.GroupVersionKind().GroupKind()}
}

// ParseID reads an inventory id back with cli-utils' ParseObjMetadata (the
// namespace, group and kind hold no '_'; "__" in the name is ':'). It fails
// with `invalid inventory id "<id>"` on anything else, such as a name that
// holds a single '_'.
func ParseID(id string) (ObjMeta, error) {
	o, err := object.ParseObjMetadata(id)
	if err != nil {
		return ObjMeta{}, fmt.Errorf("invalid inventory id %q", id)
	}
	return ObjMeta{Namespace: o.Namespace, Name: o.Name, GroupKind: o.GroupKind}, nil
}
