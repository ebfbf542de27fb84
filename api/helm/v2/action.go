package v2

// Action is the stage of a HelmRelease reconcile an event reports: the
// `action` of the event.toolkit.fluxcd.io/v1 payload posted to
// --events-addr. Flux compatible: the values of helm-controller api/v2
// (v1.7) action.go.
type Action string

// String returns the action as sent in the event payload.
func (a Action) String() string { return string(a) }

const (
	// ActionReconcile is the outcome of a whole reconcile: finished or failed.
	ActionReconcile Action = "Reconcile"
	// ActionCheckDependencies is waiting for the spec.dependsOn HelmReleases.
	ActionCheckDependencies Action = "CheckDependencies"
	// ActionResolveSource is resolving the chart source and loading the chart.
	ActionResolveSource Action = "ResolveSource"
	// ActionResolveValues is composing values from the spec, ConfigMaps and Secrets.
	ActionResolveValues Action = "ResolveValues"
	// ActionHealthCheck is waiting for the release's objects to be healthy.
	ActionHealthCheck Action = "HealthCheck"
	// ActionDriftDetection is detecting and correcting drift from the release.
	ActionDriftDetection Action = "DriftDetection"
	// ActionHelmInstall is a Helm install.
	ActionHelmInstall Action = "HelmInstall"
	// ActionHelmUpgrade is a Helm upgrade.
	ActionHelmUpgrade Action = "HelmUpgrade"
	// ActionHelmRollback is a Helm rollback to the last deployed release.
	ActionHelmRollback Action = "HelmRollback"
	// ActionHelmTest is running the release's test hooks.
	ActionHelmTest Action = "HelmTest"
	// ActionHelmUninstall is a Helm uninstall.
	ActionHelmUninstall Action = "HelmUninstall"
	// ActionUnlock is unlocking a release left pending.
	ActionUnlock Action = "Unlock"
)
