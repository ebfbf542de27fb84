package controller

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/drift"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	helmaction "helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	ctrl "sigs.k8s.io/controller-runtime"
)

// releaseState is the state of a release against its HelmRelease (Flux's
// internal/reconcile/state.go).
type releaseState string

const (
	stateAbsent    releaseState = "Absent"
	stateLocked    releaseState = "Locked"
	stateUnmanaged releaseState = "Unmanaged"
	stateOutOfSync releaseState = "OutOfSync"
	stateUntested  releaseState = "Untested"
	stateFailed    releaseState = "Failed"
	stateDrifted   releaseState = "Drifted"
	stateInSync    releaseState = "InSync"
)

// determineState reads the last release in storage and compares it with
// status.history and the desired chart and values. Flux compatible order of
// checks (2.10 §2.1 fact 4). A Drifted state leaves its report in req.drift.
func (r *HelmReleaseReconciler) determineState(ctx context.Context, req *releaseRequest, cfg *helmaction.Configuration) (releaseState, string, error) {
	obj := req.obj
	rls, err := action.LastRelease(cfg, release.ShortName(obj))
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return stateAbsent, "no release in storage for object", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("failed to retrieve last release from storage: %w", err)
	}
	if rls.Info != nil && rls.Info.Status.IsPending() {
		return stateLocked, fmt.Sprintf("release with status '%s'", rls.Info.Status), nil
	}
	cur := release.Latest(obj.Status.History)
	if cur == nil {
		if rls.Info != nil && rls.Info.Status == helmrelease.StatusUninstalled {
			return stateAbsent, "found uninstalled release in storage", nil
		}
		return stateUnmanaged, "found existing release in storage", nil
	}
	if cur.Name != rls.Name || cur.Namespace != rls.Namespace || cur.Version != rls.Version {
		return stateUnmanaged, "release not observed to be made for object", nil
	}
	if release.Digest(rls, cur.OCIDigest) != cur.Digest {
		return stateUnmanaged, "release digest verification error", nil
	}
	switch rls.Info.Status {
	case helmrelease.StatusFailed:
		return stateFailed, "", nil
	case helmrelease.StatusUninstalled:
		return stateAbsent, "found uninstalled release in storage", nil
	case helmrelease.StatusDeployed:
		if rls.Chart == nil || rls.Chart.Metadata == nil || rls.Chart.Metadata.Name != req.chart.Metadata.Name ||
			rls.Chart.Metadata.Version != req.chart.Metadata.Version {
			return stateOutOfSync, "release chart has changed", nil
		}
		if cur.ConfigDigest != req.configDigest {
			return stateOutOfSync, "release config values changed", nil
		}
		if obj.Status.ObservedGeneration != obj.Generation {
			if d := postrender.PostRenderersDigest(obj); d != obj.Status.ObservedPostRenderersDigest {
				return stateOutOfSync, "postrenderers digest has changed", nil
			}
			if d := postrender.CommonMetadataDigest(obj); d != obj.Status.ObservedCommonMetadataDigest {
				return stateOutOfSync, "common metadata digest has changed", nil
			}
		}
		if ts := action.TestSpec(obj); ts.Enable {
			if !release.HasBeenTested(cur) {
				return stateUntested, "", nil
			}
			if m := activeRemediation(obj); m != nil && !m.mustIgnoreTestFailures(ts.IgnoreFailures) &&
				release.HasFailedTest(cur) {
				return stateFailed, "release has test in failed phase", nil
			}
		}
		if mode := driftMode(obj); mode == helmv2.DriftDetectionEnabled || mode == helmv2.DriftDetectionWarn {
			c, err := req.getter.client()
			if err != nil {
				return "", "", err
			}
			report, err := drift.Detect(ctx, c, rls.Manifest, rls.Name, rls.Namespace, *obj.Spec.DriftDetection)
			if err != nil {
				if report == nil || !report.Drifted() {
					return "", "", fmt.Errorf("unable to determine cluster state: %w", err)
				}
				ctrl.LoggerFrom(ctx).Error(err, "diff of release against cluster state completed with error")
			}
			if report.Drifted() {
				req.drift = report
				return stateDrifted, "", nil
			}
		}
		return stateInSync, "", nil
	}
	return "", "", fmt.Errorf("unable to determine state for release with status '%s'", rls.Info.Status)
}

// releaseTargetChanged reports whether the release the history records is
// no longer the one the spec names: another storage namespace, release
// namespace, release name or (with chartNameChangeStrategy Reinstall, the
// default) chart name. Flux compatible (internal/action ReleaseTargetChanged).
func releaseTargetChanged(obj *helmv2.HelmRelease, chartName string) (string, bool) {
	cur := release.Latest(obj.Status.History)
	switch {
	case obj.Status.StorageNamespace == "" || cur == nil:
		return "", false
	case release.StorageNamespace(obj) != obj.Status.StorageNamespace:
		return "storage namespace", true
	case release.Namespace(obj) != cur.Namespace:
		return "release namespace", true
	case release.ShortName(obj) != cur.Name:
		return "release name", true
	case chartName != cur.ChartName && action.UpgradeSpec(obj).ChartNameChangeStrategy != "InPlaceUpdate":
		return "chart name", true
	}
	return "", false
}

// driftMode is spec.driftDetection.mode, default disabled.
func driftMode(obj *helmv2.HelmRelease) string {
	if obj.Spec.DriftDetection == nil || obj.Spec.DriftDetection.Mode == "" {
		return helmv2.DriftDetectionDisabled
	}
	return obj.Spec.DriftDetection.Mode
}
