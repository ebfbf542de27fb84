package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxFinalizeWindow caps finalizeWindow: a Kustomization with a long
// interval and no timeout still lets its namespace go within the hour.
const maxFinalizeWindow = time.Hour

// listedObjects is how many object ids a left-in-place event names; the
// rest are counted.
const listedObjects = 5

// finalizeWindow is how long after its deletion a Kustomization whose
// objects cannot be pruned for a reason that may pass (an unreachable
// target) keeps its finalizer: its timeout (spec.timeout, else
// spec.interval minus 30s, at least 30s, as Flux's GetTimeout), at most
// maxFinalizeWindow.
func finalizeWindow(obj *kustomizev1.Kustomization) time.Duration {
	return min(timeout(obj), maxFinalizeWindow)
}

// finalizeRetryStep is the wait between two pruning attempts within
// window: a fifth of it, so about five attempts are made, and at least 2s.
func finalizeRetryStep(window time.Duration) time.Duration {
	return max(window/5, 2*time.Second)
}

// credentialsGone tells whether err, from building the client to prune
// with, means the credentials are gone for good (the kubeConfig Secret not
// found, or a kubeconfig that cannot be used as it is) rather than a
// target that may answer later, and returns the cause for the event.
func credentialsGone(obj *kustomizev1.Kustomization, err error) (string, bool) {
	switch kc := obj.Spec.KubeConfig; {
	case kc != nil && kc.SecretRef != nil && apierrors.IsNotFound(err):
		return fmt.Sprintf("KubeConfig secret '%s/%s' not found", obj.Namespace, kc.SecretRef.Name), true
	case errors.Is(err, errKubeConfig):
		return err.Error(), true
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return err.Error(), true
	}
	return "", false
}

// leaveInPlace reports (skipPruning) that pruning is skipped for cause
// and which objects of the inventory stay.
func (r *KustomizationReconciler) leaveInPlace(ctx context.Context, obj *kustomizev1.Kustomization, cause string, stale []ssa.Change) {
	ids := make([]string, len(stale))
	for i, s := range stale {
		ids[i] = s.Meta.String()
	}
	r.skipPruning(ctx, obj, fmt.Sprintf("%s; %s", cause, objectList(ids)))
}

// skipPruning emits "Skipping pruning: <why>" as a PruneFailed Warning
// event and logs it at error level: the API server refuses events in a
// namespace being deleted, the usual reason a deleted Kustomization is
// released, so the log is the record that always remains.
func (r *KustomizationReconciler) skipPruning(ctx context.Context, obj *kustomizev1.Kustomization, why string) {
	msg := "Skipping pruning: " + why
	ctrl.LoggerFrom(ctx).Error(errors.New(msg), "the deleted Kustomization is released with objects left in place")
	r.Events.Event(obj, corev1.EventTypeWarning, meta.PruneFailedReason, msg, nil)
}

// objectList is "N object(s) of the inventory left in place: id, id, ...
// and K more",
// naming at most listedObjects ids in their given order.
func objectList(ids []string) string {
	noun := "objects"
	if len(ids) == 1 {
		noun = "object"
	}
	shown := ids[:min(len(ids), listedObjects)]
	s := fmt.Sprintf("%d %s of the inventory left in place: %s", len(ids), noun, strings.Join(shown, ", "))
	if more := len(ids) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// classifyFailed finds out, with a dry-run delete of each object pruning
// failed on, whether trying again may help (transient: the target did not
// answer, or the object is now deletable) or not: an account refused the
// deletion, or the target does not know the kind (a forged or outdated
// inventory). When nothing is transient, left says which objects stay
// and why, for the event.
func classifyFailed(ctx context.Context, c client.Client, failed []ssa.Change) (left string, transient bool) {
	ids := make([]string, 0, len(failed))
	for _, f := range failed {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(f.Meta.GroupKind.WithVersion(f.Version))
		u.SetNamespace(f.Meta.Namespace)
		u.SetName(f.Meta.Name)
		err := c.Delete(ctx, u, client.DryRunAll)
		why := permanentReason(err)
		if why == "" {
			return "", true
		}
		ids = append(ids, f.Meta.String()+" ("+why+")")
	}
	return "the deletion was refused; " + objectList(ids), false
}

// permanentReason names why a delete that failed with err cannot succeed
// by trying again, or is "" when it may (no error, not found, the target
// unreachable or overloaded).
func permanentReason(err error) string {
	var netErr net.Error
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return ""
	case apimeta.IsNoMatchError(err):
		return "unknown kind"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ""
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), apierrors.IsUnexpectedServerError(err),
		apierrors.IsConflict(err):
		return ""
	case apierrors.ReasonForError(err) != "":
		return strings.ToLower(string(apierrors.ReasonForError(err)))
	}
	return "refused"
}
