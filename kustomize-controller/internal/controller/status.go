package controller

import (
	"fmt"
	"strings"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
)

// eventMeta is the metadata of a Kustomization's events: the revision of
// the last attempt. Flux compatible.
func (r *KustomizationReconciler) eventMeta(obj *kustomizev1.Kustomization) map[string]string {
	m := map[string]string{}
	if rev := obj.Status.LastAttemptedRevision; rev != "" {
		m[kustomizev1.GroupVersion.Group+"/revision"] = rev
	}
	return m
}

// reportChanges emits the change set as Flux does, and, beyond Flux, one
// event per corrected drift naming the fields, values and field managers,
// and one per object whose fields the apply deleted (`FieldsRemoved`).
// secrets (decrypted values, values substituted from Secrets) are
// masked in the drift events, which quote the fields' values.
func (r *KustomizationReconciler) reportChanges(rec *events.Recorder, obj *kustomizev1.Kustomization, changes []ssa.Change, secrets *redact.Values) {
	var lines []string
	for _, c := range changes {
		if c.Action == ssa.Unchanged || c.Action == ssa.Skipped {
			continue
		}
		lines = append(lines, c.String())
		if len(c.Drift) > 0 {
			drift := []ssa.ObjectDrift{{Object: c.Meta.String(), State: "changed", Fields: c.Drift}}
			rec.WithAnnotations(ssa.DriftAnnotations(drift, secrets.Mask)).Event(obj, corev1.EventTypeNormal, "DriftCorrected",
				secrets.Mask(ssa.DriftMessage(c.Meta, c.Drift)), r.eventMeta(obj))
		}
		if len(c.Removed) > 0 {
			rec.Event(obj, corev1.EventTypeNormal, "FieldsRemoved",
				fmt.Sprintf("%s %s: %s removed", c.Meta, c.Action, strings.Join(c.Removed, " removed, ")), r.eventMeta(obj))
		}
	}
	if len(lines) > 0 {
		rec.WithAction(changesAction(obj, changes).String()).Event(obj, corev1.EventTypeNormal, "Progressing", strings.Join(lines, "\n"), r.eventMeta(obj))
	}
}

// changesAction is the event action of a change set: Finalize while obj is
// being deleted, Prune when it only deletes, else Apply. Flux compatible.
func changesAction(obj *kustomizev1.Kustomization, changes []ssa.Change) kustomizev1.Action {
	if !obj.DeletionTimestamp.IsZero() {
		return kustomizev1.ActionFinalize
	}
	for _, c := range changes {
		if c.Action != ssa.Deleted && c.Action != ssa.Unchanged && c.Action != ssa.Skipped {
			return kustomizev1.ActionApply
		}
	}
	return kustomizev1.ActionPrune
}
