package action

import (
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	helmaction "helm.sh/helm/v3/pkg/action"
)

// Rollback rolls release name back to its version version with
// spec.rollback's options, keeping MaxHistory versions in storage. Flux
// compatible (internal/action/rollback.go).
func Rollback(cfg *helmaction.Configuration, obj *helmv2.HelmRelease, name string, version int) error {
	spec := RollbackSpec(obj)
	rb := helmaction.NewRollback(cfg)
	rb.Version = version
	rb.Timeout = TimeoutOf(obj, spec.Timeout)
	rb.Wait = !spec.DisableWait
	rb.WaitForJobs = !spec.DisableWaitForJobs
	rb.DisableHooks = spec.DisableHooks
	rb.Force = spec.Force
	rb.CleanupOnFail = spec.CleanupOnFail
	rb.MaxHistory = MaxHistory(obj)
	return rb.Run(name)
}

// Uninstall uninstalls release name with spec.uninstall's options
// (deletion propagation background by default). A release not in storage
// is driver.ErrReleaseNotFound. Flux compatible
// (internal/action/uninstall.go).
func Uninstall(cfg *helmaction.Configuration, obj *helmv2.HelmRelease, name string) error {
	spec := UninstallSpec(obj)
	un := helmaction.NewUninstall(cfg)
	un.Timeout = TimeoutOf(obj, spec.Timeout)
	un.DisableHooks = spec.DisableHooks
	un.KeepHistory = spec.KeepHistory
	un.Wait = !spec.DisableWait
	un.DeletionPropagation = deletionPropagation(spec)
	_, err := un.Run(name)
	return err
}
