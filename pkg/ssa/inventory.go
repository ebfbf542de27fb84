package ssa

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjMeta identifies an object across API versions.
type ObjMeta struct {
	Namespace, Name string
	GroupKind       schema.GroupKind
}

// ID is the inventory id `<namespace>_<name>_<group>_<kind>`, with ':' in
// names encoded as "__". Flux compatible (cli-utils ObjMetadata.String).
func (o ObjMeta) ID() string {
	return fmt.Sprintf("%s_%s_%s_%s", o.Namespace, strings.ReplaceAll(o.Name, ":", "__"), o.GroupKind.Group, o.GroupKind.Kind)
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

// ParseID reads an inventory id back.
func ParseID(id string) (ObjMeta, error) {
	// Names may hold "__" (encoded ':'); the namespace and the group hold no
	// '_' and kinds no '_', so split from both ends.
	first := strings.Index(id, "_")
	last := strings.LastIndex(id, "_")
	if first < 0 || last <= first {
		return ObjMeta{}, fmt.Errorf("invalid inventory id %q", id)
	}
	rest := id[first+1 : last]
	groupSep := strings.LastIndex(rest, "_")
	if groupSep < 0 {
		return ObjMeta{}, fmt.Errorf("invalid inventory id %q", id)
	}
	return ObjMeta{
		Namespace: id[:first],
		Name:      strings.ReplaceAll(rest[:groupSep], "__", ":"),
		GroupKind: schema.GroupKind{Group: rest[groupSep+1:], Kind: id[last+1:]},
	}, nil
}
