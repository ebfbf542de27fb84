package ssa_test

import (
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInventoryIDWrittenByOldEddy: an
// inventory id written by the Eddy before the cli-utils rewrite must still
// be recognised as the object it names once the new code applies that
// object again. Old Eddy wrote ':' as "__" for every kind; cli-utils'
// ObjMetadata.String does so for RBAC kinds only, while ParseObjMetadata
// decodes "__" for every kind. A custom resource named "a:b" (a valid name
// for a CR: path-segment validation) applied by old Eddy is in the
// inventory as "ns_a__b_example.com_Widget"; the new code applies it as
// "ns_a:b_example.com_Widget". kustomization_controller.go compares the
// id strings, so the old entry is stale, ParseID maps it to the live object
// "a:b", and DeleteStale deletes the object just applied (it carries this
// Kustomization's owner labels). Staleness is decided by ssa.Stale, which
// compares parsed identities.
func TestInventoryIDWrittenByOldEddy(t *testing.T) {
	applied := ssa.ObjMeta{Namespace: "ns", Name: "a:b", GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}
	const oldEntry = "ns_a__b_example.com_Widget" // old ID(): strings.ReplaceAll(name, ":", "__") for every kind
	if oldEntry == applied.ID() {
		t.Fatalf("the new id of %v is the old one: the test no longer covers two id forms", applied)
	}
	stale, invalid := ssa.Stale([]string{oldEntry, "ns_gone_example.com_Widget"}, []ssa.ObjMeta{applied})
	if _, ok := stale[oldEntry]; ok || len(stale) != 1 || len(invalid) != 0 {
		t.Errorf("Stale(%q next to the applied %v, whose new id is %q) = %v, %v; want only the gone object: "+
			"the old entry names the object just applied", oldEntry, applied, applied.ID(), stale, invalid)
	}
}

// TestInventoryIDUnderscoreName: a custom
// resource may be named "my_widget"; old Eddy parsed its id (split from
// both ends) and could prune it. ParseObjMetadata refuses it, and reconcile
// and finalize `continue` past an id that does not parse, so the object is
// silently dropped from the inventory and never pruned (leaked), on the
// next apply without it or on deletion of the Kustomization.
func TestInventoryIDUnderscoreName(t *testing.T) {
	obj := ssa.ObjMeta{Namespace: "ns", Name: "my_widget", GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}
	got, err := ssa.ParseID(obj.ID())
	if err != nil || got != obj {
		t.Errorf("ParseID(%q) = %v, %v; want %v (old Eddy read it back)", obj.ID(), got, err, obj)
	}
}
