package controller

import (
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChangesAction: a change set's event is Apply when it creates or
// changes objects, Prune when it only deletes, Finalize on deletion.
func TestChangesAction(t *testing.T) {
	now := metav1.Now()
	live := &kustomizev1.Kustomization{}
	deleting := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}
	for _, tc := range []struct {
		obj     *kustomizev1.Kustomization
		actions []ssa.Action
		want    kustomizev1.Action
	}{
		{live, []ssa.Action{ssa.Created, ssa.Deleted}, kustomizev1.ActionApply},
		{live, []ssa.Action{ssa.Unchanged, ssa.Configured}, kustomizev1.ActionApply},
		{live, []ssa.Action{ssa.Deleted, ssa.Unchanged}, kustomizev1.ActionPrune},
		{deleting, []ssa.Action{ssa.Deleted}, kustomizev1.ActionFinalize},
	} {
		var changes []ssa.Change
		for _, a := range tc.actions {
			changes = append(changes, ssa.Change{Action: a})
		}
		if got := changesAction(tc.obj, changes); got != tc.want {
			t.Errorf("%v (deleting %v): %s, want %s", tc.actions, !tc.obj.DeletionTimestamp.IsZero(), got, tc.want)
		}
	}
}
