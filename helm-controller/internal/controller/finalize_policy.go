package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// maxUninstallWindow caps uninstallWindow, so that a long uninstall
// timeout still lets a namespace go within the hour.
const maxUninstallWindow = time.Hour

// noCredentialsError is an uninstall that cannot work however often it is
// tried: no way to reach the cluster (a spec.kubeConfig Secret missing or unusable), or
// the account refused reading the release's storage.
type noCredentialsError struct{ err error }

func (e *noCredentialsError) Error() string { return e.err.Error() }
func (e *noCredentialsError) Unwrap() error { return e.err }

// reportedError is a failed uninstall already announced by its
// UninstallFailed Warning event.
type reportedError struct{ msg string }

func (e *reportedError) Error() string { return e.msg }

// uninstallWindow is how long after its deletion a HelmRelease whose
// uninstall fails keeps its finalizer: the uninstall's timeout
// (spec.uninstall.timeout, else spec.timeout, else 5m), at most
// maxUninstallWindow.
func uninstallWindow(obj *helmv2.HelmRelease) time.Duration {
	return min(action.TimeoutOf(obj, action.UninstallSpec(obj).Timeout), maxUninstallWindow)
}

// uninstallRetryStep is the wait between two uninstall attempts within
// window: a fifth of it, so about five attempts are made, and at least 2s.
func uninstallRetryStep(window time.Duration) time.Duration {
	return max(window/5, 2*time.Second)
}

// uninstallFailed decides what follows the failed uninstall err of obj
// being deleted: a result asking to try again, within uninstallWindow of
// the deletion unless err is a noCredentialsError, or a zero result after
// an UninstallFailed Warning event saying the release is left in place.
// The deletion timestamp counts the time, so a restart of the controller
// does not start the count again.
func (r *HelmReleaseReconciler) uninstallFailed(ctx context.Context, obj *helmv2.HelmRelease, err error) ctrl.Result {
	var reported *reportedError
	var noCreds *noCredentialsError
	window := uninstallWindow(obj)
	age := time.Since(obj.DeletionTimestamp.Time)
	cause := err.Error()
	switch {
	case errors.As(err, &noCreds):
	case age < window:
		ctrl.LoggerFrom(ctx).Error(err, "uninstalling the release of the deleted HelmRelease failed; retrying",
			"givingUpIn", (window - age).Round(time.Second).String())
		if !errors.As(err, &reported) {
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.UninstallFailedReason, cause, nil)
		}
		return ctrl.Result{RequeueAfter: min(uninstallRetryStep(window), window-age)}
	default:
		cause = fmt.Sprintf("still failing %s after the deletion: %s", window, cause)
	}
	r.leaveReleaseInPlace(ctx, obj, cause)
	return ctrl.Result{}
}

// leaveReleaseInPlace emits the UninstallFailed Warning event saying that
// the uninstall of obj's release is skipped for cause and which release
// stays (the latest of status.history, else the one the spec names), and
// logs it at error level: the API server refuses events in a namespace
// being deleted, so the log is the record that always remains.
func (r *HelmReleaseReconciler) leaveReleaseInPlace(ctx context.Context, obj *helmv2.HelmRelease, cause string) {
	name, ns := release.ShortName(obj), release.Namespace(obj)
	if cur := release.Latest(obj.Status.History); cur != nil {
		name, ns = cur.Name, cur.Namespace
	}
	msg := fmt.Sprintf("Skipping uninstall: %s; Helm release '%s/%s' left in place (storage namespace '%s')", cause, ns, name, obj.Status.StorageNamespace)
	ctrl.LoggerFrom(ctx).Error(errors.New(msg), "the deleted HelmRelease is released with its Helm release left in place")
	r.Events.Event(obj, corev1.EventTypeWarning, helmv2.UninstallFailedReason, msg, nil)
}
