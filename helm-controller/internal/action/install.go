package action

import (
	"context"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// Install installs ch with vals as obj's release (release.ShortName in
// release.Namespace) with spec.install's options and the post-renderers of
// spec.postRenderers and spec.commonMetadata. It returns Helm's result: the
// release, and the error of a failed install (a failed release may be
// stored all the same). Flux compatible (internal/action/install.go).
func Install(ctx context.Context, cfg *helmaction.Configuration, obj *helmv2.HelmRelease, ch *chart.Chart, vals map[string]any) (*helmrelease.Release, error) {
	spec := InstallSpec(obj)
	in := helmaction.NewInstall(cfg)
	in.ReleaseName = release.ShortName(obj)
	in.Namespace = release.Namespace(obj)
	in.Timeout = TimeoutOf(obj, spec.Timeout)
	in.Wait = !spec.DisableWait
	in.WaitForJobs = !spec.DisableWaitForJobs
	in.DisableHooks = spec.DisableHooks
	in.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
	in.SkipSchemaValidation = spec.DisableSchemaValidation
	in.Replace = spec.Replace
	in.CreateNamespace = spec.CreateNamespace
	in.TakeOwnership = !spec.DisableTakeOwnership
	in.SkipCRDs = spec.SkipCRDs || spec.CRDs == helmv2.CRDsSkip
	in.PostRenderer = postrender.Build(obj)
	return in.RunWithContext(ctx, ch, vals)
}

// Upgrade upgrades obj's release to ch with vals, with spec.upgrade's
// options (CRDs skipped unless spec.upgrade.crds says otherwise), keeping
// MaxHistory versions in storage. Flux compatible
// (internal/action/upgrade.go).
func Upgrade(ctx context.Context, cfg *helmaction.Configuration, obj *helmv2.HelmRelease, ch *chart.Chart, vals map[string]any) (*helmrelease.Release, error) {
	spec := UpgradeSpec(obj)
	up := helmaction.NewUpgrade(cfg)
	up.Namespace = release.Namespace(obj)
	up.Timeout = TimeoutOf(obj, spec.Timeout)
	up.Wait = !spec.DisableWait
	up.WaitForJobs = !spec.DisableWaitForJobs
	up.DisableHooks = spec.DisableHooks
	up.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
	up.SkipSchemaValidation = spec.DisableSchemaValidation
	up.Force = spec.Force
	up.CleanupOnFail = spec.CleanupOnFail
	up.ReuseValues = spec.PreserveValues
	up.ResetValues = !spec.PreserveValues
	up.MaxHistory = MaxHistory(obj)
	up.TakeOwnership = !spec.DisableTakeOwnership
	up.SkipCRDs = spec.CRDs == "" || spec.CRDs == helmv2.CRDsSkip
	up.PostRenderer = postrender.Build(obj)
	return up.RunWithContext(ctx, release.ShortName(obj), ch, vals)
}
