package v1

// Action is the stage of a Kustomization reconcile an event reports: the
// `action` of the event.toolkit.fluxcd.io/v1 payload posted to
// --events-addr. Flux compatible: the values of kustomize-controller api/v1
// (v1.10) action.go.
type Action string

// String returns the action as sent in the event payload.
func (a Action) String() string { return string(a) }

const (
	// ActionReconcile is the outcome of a whole reconcile: finished or failed.
	ActionReconcile Action = "Reconcile"
	// ActionCheckDependencies is waiting for the spec.dependsOn Kustomizations.
	ActionCheckDependencies Action = "CheckDependencies"
	// ActionResolveSource is resolving spec.sourceRef (access, artifact).
	ActionResolveSource Action = "ResolveSource"
	// ActionDecrypt is decrypting SOPS-encrypted manifests.
	ActionDecrypt Action = "Decrypt"
	// ActionApply is server-side applying the built manifests (and
	// correcting drift).
	ActionApply Action = "Apply"
	// ActionPrune is deleting objects no longer in the source.
	ActionPrune Action = "Prune"
	// ActionHealthCheck is waiting for the applied objects to be healthy.
	ActionHealthCheck Action = "HealthCheck"
	// ActionFinalize is pruning on deletion, by the deletion policy.
	ActionFinalize Action = "Finalize"
	// ActionWaitForTermination is waiting for pruned objects to be gone.
	ActionWaitForTermination Action = "WaitForTermination"
)
