package controller

import (
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/fluxcd/pkg/apis/meta"
)

// eventActions gives kustomize-controller's events their action (the
// `action` of the event.toolkit.fluxcd.io/v1 payload) by reason; any other
// reason is the outcome of the reconcile: Reconcile (finished, or failed
// with the Ready reason). reportChanges sets Apply, Prune or Finalize by
// what the change set did; a call site whose reason is reported by another
// stage too sets its action with Events.WithAction. Flux compatible: the
// actions kustomize-controller v1.10.1 gives these events.
var eventActions = events.ActionTable(kustomizev1.ActionReconcile, map[string]kustomizev1.Action{
	"DriftCorrected":                      kustomizev1.ActionApply,
	"FieldsRemoved":                       kustomizev1.ActionApply,
	meta.ProgressingReason:                kustomizev1.ActionApply,
	meta.SucceededReason:                  kustomizev1.ActionHealthCheck, // "Health check passed in …"
	kustomizev1.HealthCheckCanceledReason: kustomizev1.ActionHealthCheck,
	kustomizev1.DependencyNotReadyReason:  kustomizev1.ActionCheckDependencies,
	kustomizev1.AccessDeniedReason:        kustomizev1.ActionResolveSource,
	kustomizev1.PruneFailedReason:         kustomizev1.ActionFinalize,
})
