package controller

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/pkg/remotecluster"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// finalize uninstalls the release of a HelmRelease being deleted and
// deletes the chart source (HelmChart or OCIRepository) it generated; the
// skeleton then removes the finalizer. A suspended HelmRelease leaves both
// in place. Flux compatible: nothing is uninstalled without
// status.storageNamespace (never released), nor when the impersonated
// ServiceAccount is gone (Eddy says so in a Warning event, Flux only logs).
//
// Deleting must finish (a namespace waits for its HelmReleases), where
// Flux retries a failing uninstall for ever: an uninstall that cannot work
// (no credentials: noCredentialsError) is skipped at once, any other
// failure (an uninstall hook failing, the API server not answering) is
// retried for uninstallWindow after the deletion; either way the release
// is then left in place with an UninstallFailed Warning event naming it.
func (r *HelmReleaseReconciler) finalize(ctx context.Context, obj *helmv2.HelmRelease) (ctrl.Result, error) {
	if obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	if obj.Status.StorageNamespace != "" {
		// A remote cluster's account is not in this cluster (Flux checks
		// only local ones).
		if sa := r.serviceAccount(obj); sa != "" && obj.Spec.KubeConfig == nil {
			err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sa}, &corev1.ServiceAccount{})
			if apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("skipping Helm release uninstallation: ServiceAccount not found", "serviceAccount", sa)
				r.leaveReleaseInPlace(ctx, obj, fmt.Sprintf("ServiceAccount '%s/%s' not found", obj.Namespace, sa))
				return ctrl.Result{}, r.deleteGeneratedChart(ctx, obj, obj.Status.GetHelmChartReference())
			}
		}
		if err := r.uninstallCurrent(ctx, obj); err != nil {
			if res := r.uninstallFailed(ctx, obj, err); !res.IsZero() {
				return res, nil
			}
		}
	}
	return ctrl.Result{}, r.deleteGeneratedChart(ctx, obj, obj.Status.GetHelmChartReference())
}

// uninstallCurrent uninstalls the release status.history (or, without
// history, the spec) names from status.storageNamespace, emitting Flux's
// uninstall events. No release in storage is not an error.
func (r *HelmReleaseReconciler) uninstallCurrent(ctx context.Context, obj *helmv2.HelmRelease) error {
	name, ns := release.ShortName(obj), release.Namespace(obj)
	var chartName string
	if cur := release.Latest(obj.Status.History); cur != nil {
		name, ns, chartName = cur.Name, cur.Namespace, cur.ChartName+"@"+cur.ChartVersion
	}
	storageNS := obj.Status.StorageNamespace
	if storageNS == "" {
		storageNS = release.StorageNamespace(obj)
	}
	getter, err := r.getterFor(ctx, obj)
	if errors.Is(err, remotecluster.ErrKubeConfig) {
		return &noCredentialsError{err: err}
	}
	if err != nil {
		return err
	}
	getter.namespace = ns
	var observed []*release.Observed
	cfg, err := newHelmConfig(ctx, getter, storageNS, 0, r.HealthPoll, nil, helmLog(ctx), release.ObserveInto(&observed, ""))
	if err != nil {
		return err
	}
	rls, err := action.LastRelease(cfg, name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &noCredentialsError{err: err}
	}
	if err != nil {
		return err
	}
	if chartName == "" {
		chartName = release.ChartNameOf(rls)
	}
	full := release.FullNameOf(rls)
	err = action.Uninstall(cfg, obj, name)
	obj.Status.History = release.Record(obj.Status.History, observed, helmv2.ReleaseActionUninstall, "")
	em := r.snapshotMeta(release.Latest(obj.Status.History))
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		msg := fmt.Sprintf("Helm uninstall failed for release %s with chart %s: %s", full, chartName, err)
		r.Events.Event(obj, corev1.EventTypeWarning, helmv2.UninstallFailedReason, msg, em)
		return &reportedError{msg: msg}
	}
	r.Events.Event(obj, corev1.EventTypeNormal, helmv2.UninstallSucceededReason,
		fmt.Sprintf("Helm uninstall succeeded for release %s with chart %s", full, chartName), em)
	return nil
}
