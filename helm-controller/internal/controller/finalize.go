package controller

import (
	"context"
	"errors"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"helm.sh/helm/v3/pkg/action"
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
// ServiceAccount is gone.
func (r *HelmReleaseReconciler) finalize(ctx context.Context, obj *helmv2.HelmRelease) (ctrl.Result, error) {
	if obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	if obj.Status.StorageNamespace != "" {
		if sa := r.serviceAccount(obj); sa != "" {
			err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sa}, &corev1.ServiceAccount{})
			if apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("skipping Helm release uninstallation: ServiceAccount not found", "serviceAccount", sa)
				return ctrl.Result{}, r.deleteGeneratedChart(ctx, obj, obj.Status.GetHelmChartReference())
			}
		}
		if err := r.uninstallCurrent(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.deleteGeneratedChart(ctx, obj, obj.Status.GetHelmChartReference())
}

// uninstallCurrent uninstalls the release status.history (or, without
// history, the spec) names from status.storageNamespace, emitting Flux's
// uninstall events. No release in storage is not an error.
func (r *HelmReleaseReconciler) uninstallCurrent(ctx context.Context, obj *helmv2.HelmRelease) error {
	name, ns := shortenName(releaseName(obj)), releaseNamespace(obj)
	var chartName string
	if cur := latestSnapshot(obj); cur != nil {
		name, ns, chartName = cur.Name, cur.Namespace, cur.ChartName+"@"+cur.ChartVersion
	}
	storageNS := obj.Status.StorageNamespace
	if storageNS == "" {
		storageNS = storageNamespace(obj)
	}
	getter, err := r.getterFor(obj)
	if err != nil {
		return err
	}
	getter.namespace = ns
	var observed []*observedRls
	cfg, err := newHelmConfig(ctx, getter, storageNS, 0, r.HealthPoll, helmLog(ctx), observeInto(&observed, ""))
	if err != nil {
		return err
	}
	rls, err := lastRelease(cfg, name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if chartName == "" && rls.Chart != nil && rls.Chart.Metadata != nil {
		chartName = rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version
	}
	full := fmt.Sprintf("%s/%s.v%d", rls.Namespace, rls.Name, rls.Version)
	un := action.NewUninstall(cfg)
	spec := uninstallSpec(obj)
	un.Timeout = actionTimeout(obj, spec.Timeout)
	un.DisableHooks = spec.DisableHooks
	un.KeepHistory = spec.KeepHistory
	un.Wait = !spec.DisableWait
	un.DeletionPropagation = deletionPropagation(spec)
	_, err = un.Run(name)
	recordObserved(obj, observed, helmv2.ReleaseActionUninstall, "")
	em := r.snapshotMeta(latestSnapshot(obj))
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		msg := fmt.Sprintf("Helm uninstall failed for release %s with chart %s: %s", full, chartName, err)
		r.Events.Event(obj, corev1.EventTypeWarning, helmv2.UninstallFailedReason, msg, em)
		return errors.New(msg)
	}
	r.Events.Event(obj, corev1.EventTypeNormal, helmv2.UninstallSucceededReason,
		fmt.Sprintf("Helm uninstall succeeded for release %s with chart %s", full, chartName), em)
	return nil
}
