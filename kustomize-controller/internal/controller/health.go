package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkHealth waits until the checked objects are Current (pkg/health:
// kstatus with Flux's Job rule), failing fast on a Failed one, up to the
// timeout. Checked are all applied objects with spec.wait, else
// spec.healthChecks. An object that is gone is pending ('NotFound'),
// unless its ID is in deletedWhenFinished (a Job with a TTL), which is
// healthy. Flux compatible.
func (r *KustomizationReconciler) checkHealth(ctx context.Context, obj *kustomizev1.Kustomization, c client.Client, changes []ssa.Change,
	deletedWhenFinished map[string]bool) *failure {
	var targets []ssa.Change
	switch {
	case obj.Spec.Wait:
		for _, ch := range changes {
			if ch.Action != ssa.Skipped {
				targets = append(targets, ch)
			}
		}
	case len(obj.Spec.HealthChecks) > 0:
		for _, hc := range obj.Spec.HealthChecks {
			gv, _ := schemaGV(hc.APIVersion)
			targets = append(targets, ssa.Change{
				Meta:    ssa.ObjMeta{Namespace: nsOr(hc.Namespace, obj.Namespace), Name: hc.Name, GroupKind: gv.WithKind(hc.Kind).GroupKind()},
				Version: gv.Version,
			})
		}
	default:
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, kustomizev1.HealthyCondition)
		return nil
	}
	// A Kustomization that applies itself would wait for its own
	// reconcile to end. Flux compatible: it is left out.
	self := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}
	targets = slices.DeleteFunc(targets, func(t ssa.Change) bool {
		return t.Meta.GroupKind == self && t.Meta.Namespace == obj.Namespace && t.Meta.Name == obj.Name
	})
	start := time.Now()
	poll := r.HealthPoll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		var pending []string
		for _, t := range targets {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(t.Meta.GroupKind.WithVersion(t.Version))
			if err := c.Get(ctx, client.ObjectKey{Namespace: t.Meta.Namespace, Name: t.Meta.Name}, u); err != nil {
				switch {
				case !apierrors.IsNotFound(err):
					pending = append(pending, t.Meta.String()+": "+err.Error())
				case !deletedWhenFinished[t.Meta.ID()]:
					pending = append(pending, fmt.Sprintf("%s status: '%s'", t.Meta, status.NotFoundStatus))
				}
				continue
			}
			res, err := health.Compute(u)
			if err != nil {
				pending = append(pending, t.Meta.String()+": "+err.Error())
				continue
			}
			switch res.Status {
			case status.CurrentStatus:
			case status.FailedStatus:
				return r.unhealthy(obj, fmt.Sprintf("health check failed after %s: %s status: 'Failed': %s",
					time.Since(start).Round(time.Second), t.Meta, res.Message))
			default:
				pending = append(pending, fmt.Sprintf("%s status: '%s'", t.Meta, res.Status))
			}
		}
		if len(pending) == 0 {
			msg := fmt.Sprintf("Health check passed in %s", time.Since(start).Round(time.Millisecond))
			// Flux compatible: the event marks a recovery or a new
			// revision or a change, not every periodic reconcile.
			notify := !apimeta.IsStatusConditionTrue(obj.Status.Conditions, kustomizev1.HealthyCondition) ||
				obj.Status.LastAppliedRevision != obj.Status.LastAttemptedRevision || changed(changes)
			apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: kustomizev1.HealthyCondition,
				Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: msg, ObservedGeneration: obj.Generation})
			if notify {
				r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg, r.eventMeta(obj))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			sort.Strings(pending)
			return r.unhealthy(obj, fmt.Sprintf("health check failed after %s: timeout waiting for: [%s]",
				time.Since(start).Round(time.Second), strings.Join(pending, ", ")))
		case <-time.After(poll):
		}
	}
}

// changed reports whether a change set wrote anything.
func changed(changes []ssa.Change) bool {
	for _, c := range changes {
		if c.Action != ssa.Unchanged && c.Action != ssa.Skipped {
			return true
		}
	}
	return false
}

func (r *KustomizationReconciler) unhealthy(obj *kustomizev1.Kustomization, msg string) *failure {
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: kustomizev1.HealthyCondition,
		Status: metav1.ConditionFalse, Reason: kustomizev1.HealthCheckFailedReason, Message: msg, ObservedGeneration: obj.Generation})
	return fail(kustomizev1.HealthCheckFailedReason, "%s", msg)
}
