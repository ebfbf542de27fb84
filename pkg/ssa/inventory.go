package ssa

import (
	"fmt"
	"strings"

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
// namespace, group and kind hold no '_'; "__" in the name is ':'). An id it
// refuses because the name holds a single '_' (a custom resource named
// "my_widget", which Flux's String writes and old Eddy read back) is split
// from both ends instead: namespace the first field, group and kind the last
// two, name the raw middle ("__" in it is ':' for RBAC kinds only, as
// String writes it). It fails with `invalid inventory id "<id>"` on an id
// with fewer than four fields, and with `ambiguous inventory id "<id>"` on
// one whose object's own id reads back as another object (an RBAC name
// holding both '_' and ':', such as "_:", which the format cannot tell from
// ":_"): such an entry is never pruned, rather than pruning the wrong object.
func ParseID(id string) (ObjMeta, error) {
	m, err := parseID(id)
	if err != nil {
		return m, err
	}
	// Only "__" and ':' are read or written differently; any other id is
	// its object's own (the check costs a parse, on every prune).
	if !strings.Contains(id, "__") && !strings.Contains(m.Name, ":") {
		return m, nil
	}
	if again, err := parseID(m.ID()); err != nil || again != m {
		return ObjMeta{}, fmt.Errorf("ambiguous inventory id %q", id)
	}
	return m, nil
}

func parseID(id string) (ObjMeta, error) {
	if o, err := object.ParseObjMetadata(id); err == nil {
		return ObjMeta{Namespace: o.Namespace, Name: o.Name, GroupKind: o.GroupKind}, nil
	}
	ns, rest, ok := strings.Cut(id, "_")
	i := strings.LastIndex(rest, "_")
	if !ok || i < 0 {
		return ObjMeta{}, fmt.Errorf("invalid inventory id %q", id)
	}
	kind, rest := rest[i+1:], rest[:i]
	i = strings.LastIndex(rest, "_")
	if i < 0 {
		return ObjMeta{}, fmt.Errorf("invalid inventory id %q", id)
	}
	m := ObjMeta{Namespace: ns, Name: rest[:i], GroupKind: schema.GroupKind{Group: rest[i+1:], Kind: kind}}
	if object.RBACGroupKind[m.GroupKind] {
		m.Name = strings.ReplaceAll(m.Name, "__", ":")
	}
	return m, nil
}

// Stale returns, keyed by id, the objects named by the inventory ids that
// are not among applied. Entries are compared by parsed identity, not by id
// string: one object has more than one id form (old Eddy wrote ':' as "__"
// for every kind, Flux for RBAC kinds only), and an old form of a live
// object must not be pruned. Ids that ParseID refuses are returned in
// invalid, in order.
func Stale(ids []string, applied []ObjMeta) (stale map[string]ObjMeta, invalid []string) {
	keep := make(map[ObjMeta]bool, len(applied))
	for _, m := range applied {
		keep[m] = true
	}
	stale = map[string]ObjMeta{}
	for _, id := range ids {
		m, err := ParseID(id)
		switch {
		case err != nil:
			invalid = append(invalid, id)
		case !keep[m]:
			stale[id] = m
		}
	}
	return stale, invalid
}
