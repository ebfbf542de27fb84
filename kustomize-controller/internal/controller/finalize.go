package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// finalize prunes the inventory per spec.deletionPolicy; the skeleton then
// removes the finalizer when it returns a zero result and no error.
//
// Deleting must finish (a namespace waits for its Kustomizations): when
// the credentials to prune with are gone (the impersonated ServiceAccount
// or the kubeConfig Secret not found, an unusable kubeconfig, an account
// refused the deletion) or an inventory entry names a kind the target does
// not know, the objects concerned are left in place with a PruneFailed
// Warning event naming them, and the finalizer is released. When the target
// fails otherwise (unreachable, timeouts) pruning is retried for
// finalizeWindow after the deletion, then given up the same way. A
// WaitForTermination wait ends at the timeout with a PruneFailed event
// naming the objects still terminating, and releases, as Flux's.
func (r *KustomizationReconciler) finalize(ctx context.Context, obj *kustomizev1.Kustomization) (ctrl.Result, error) {
	policy := obj.Spec.DeletionPolicy
	if policy == "" {
		policy = kustomizev1.DeletionPolicyMirrorPrune
	}
	del := policy == kustomizev1.DeletionPolicyDelete || policy == kustomizev1.DeletionPolicyWaitForTermination ||
		(policy == kustomizev1.DeletionPolicyMirrorPrune && obj.Spec.Prune)
	if !del || obj.Spec.Suspend || obj.Status.Inventory == nil || len(obj.Status.Inventory.Entries) == 0 {
		return ctrl.Result{}, nil
	}
	var stale []ssa.Change
	for _, e := range obj.Status.Inventory.Entries {
		m, err := ssa.ParseID(e.ID)
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("skipping an inventory entry that is no object id; its object is not deleted", "id", e.ID)
			continue
		}
		stale = append(stale, ssa.Change{Meta: m, Version: e.Version})
	}
	if len(stale) == 0 {
		return ctrl.Result{}, nil
	}
	if sa := r.serviceAccount(obj); sa != "" {
		// Flux compatible: without the account nothing can be deleted
		// in its name; keeping the finalizer would block the namespace.
		err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sa}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			r.skipPruning(ctx, obj, fmt.Sprintf("ServiceAccount '%s/%s' not found; the objects of the inventory are left in place", obj.Namespace, sa))
			return ctrl.Result{}, nil
		}
	}
	c, err := r.clientFor(ctx, obj)
	if err != nil {
		if cause, gone := credentialsGone(obj, err); gone {
			r.leaveInPlace(ctx, obj, cause, stale)
			return ctrl.Result{}, nil
		}
		return r.retryOrRelease(ctx, obj, err, stale)
	}
	mgr := &ssa.Manager{Client: c, Owner: FieldManager}
	deleted, failed, err := mgr.DeleteStale(ctx, stale, ssa.PruneOptions{OwnerLabels: map[string]string{NameLabel: obj.Name, NamespaceLabel: obj.Namespace}})
	r.reportChanges(r.Events, obj, deleted, nil)
	if err != nil {
		left, transient := classifyFailed(ctx, c, failed)
		if transient {
			return r.retryOrRelease(ctx, obj, err, failed)
		}
		r.skipPruning(ctx, obj, left)
	}
	if policy == kustomizev1.DeletionPolicyWaitForTermination {
		if err := r.waitForTermination(ctx, obj, c, deleted); err != nil {
			r.Events.WithAction(kustomizev1.ActionWaitForTermination.String()).Event(obj, corev1.EventTypeWarning, meta.PruneFailedReason, err.Error(), nil)
			// Flux compatible: a wait that timed out releases; one cut
			// short (the controller stopping) is tried again.
			if time.Since(obj.DeletionTimestamp.Time) < finalizeWindow(obj) {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

// retryOrRelease handles a failure to prune that may pass (the target
// unreachable, a timeout): within finalizeWindow of the deletion it emits
// the failure as a PruneFailed Warning event and asks to be called again
// after finalizeRetryStep; past it, it leaves stale in place with an event
// saying so, and the finalizer is released. The deletion timestamp counts
// the time, so a restart of the controller does not start the count again.
func (r *KustomizationReconciler) retryOrRelease(ctx context.Context, obj *kustomizev1.Kustomization, cause error, stale []ssa.Change) (ctrl.Result, error) {
	window := finalizeWindow(obj)
	age := time.Since(obj.DeletionTimestamp.Time)
	if age < window {
		ctrl.LoggerFrom(ctx).Error(cause, "pruning the inventory of the deleted Kustomization failed; retrying", "givingUpIn", (window - age).Round(time.Second).String())
		r.Events.Event(obj, corev1.EventTypeWarning, meta.PruneFailedReason, cause.Error(), nil)
		return ctrl.Result{RequeueAfter: min(finalizeRetryStep(window), window-age)}, nil
	}
	r.leaveInPlace(ctx, obj, fmt.Sprintf("still failing %s after the deletion: %s", window, cause), stale)
	return ctrl.Result{}, nil
}

// waitForTermination polls every 2s, up to the Kustomization's timeout,
// until the deleted objects are gone; it returns early with the context's
// error if ctx ends first. Flux compatible (WaitForTermination).
func (r *KustomizationReconciler) waitForTermination(ctx context.Context, obj *kustomizev1.Kustomization, c client.Client, deleted []ssa.Change) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout(obj), true, func(ctx context.Context) (bool, error) {
		pending = pending[:0]
		for _, d := range deleted {
			if d.Action != ssa.Deleted {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(d.Meta.GroupKind.WithVersion(d.Version))
			if err := c.Get(ctx, client.ObjectKey{Namespace: d.Meta.Namespace, Name: d.Meta.Name}, u); !apierrors.IsNotFound(err) {
				pending = append(pending, d.Meta.String())
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("timeout waiting for the termination of: [%s]", strings.Join(pending, ", "))
	}
	return nil
}
