package controller

import (
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/fluxcd/pkg/apis/meta"
)

// eventActions gives helm-controller's events their action (the `action` of
// the event.toolkit.fluxcd.io/v1 payload) by reason: each Helm operation's
// success and failure reasons its operation; any other reason is the
// outcome of the reconcile: Reconcile. A call site whose reason is reported
// by another stage too sets its action with Events.WithAction. Flux
// compatible: the Action values of helm-controller api/v2 (v1.7) action.go,
// by their documented stages.
var eventActions = events.ActionTable(helmv2.ActionReconcile, map[string]helmv2.Action{
	helmv2.InstallSucceededReason:   helmv2.ActionHelmInstall,
	helmv2.InstallFailedReason:      helmv2.ActionHelmInstall,
	helmv2.UpgradeSucceededReason:   helmv2.ActionHelmUpgrade,
	helmv2.UpgradeFailedReason:      helmv2.ActionHelmUpgrade,
	helmv2.TestSucceededReason:      helmv2.ActionHelmTest,
	helmv2.TestFailedReason:         helmv2.ActionHelmTest,
	helmv2.RollbackSucceededReason:  helmv2.ActionHelmRollback,
	helmv2.RollbackFailedReason:     helmv2.ActionHelmRollback,
	helmv2.UninstallSucceededReason: helmv2.ActionHelmUninstall,
	helmv2.UninstallFailedReason:    helmv2.ActionHelmUninstall,
	helmv2.PendingReleaseReason:     helmv2.ActionUnlock,
	helmv2.DriftDetectedReason:      helmv2.ActionDriftDetection,
	"DriftCorrected":                helmv2.ActionDriftDetection,
	"DriftCorrectionFailed":         helmv2.ActionDriftDetection,
	meta.HealthCheckCanceledReason:  helmv2.ActionHealthCheck,
	helmv2.DependencyNotReadyReason: helmv2.ActionCheckDependencies,
	helmv2.ArtifactFailedReason:     helmv2.ActionResolveSource,
	helmv2.SourceNotReadyReason:     helmv2.ActionResolveSource,
	helmv2.ValuesErrorReason:        helmv2.ActionResolveValues,
})
