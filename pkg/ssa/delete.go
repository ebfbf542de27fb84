package ssa

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PruneOptions select what DeleteStale may delete.
type PruneOptions struct {
	// OwnerLabels must all be on a live object for it to be deleted.
	OwnerLabels map[string]string
}

// DeleteStale deletes the objects of stale (inventory entries no longer in
// the set), in reverse apply order with background propagation, when their
// owner labels match and they are not opted out (prune: disabled,
// reconcile: disabled, ssa: Ignore). It returns the change set and the
// entries whose deletion failed, to be kept in the inventory and retried.
func (m *Manager) DeleteStale(ctx context.Context, stale []Change, opts PruneOptions) ([]Change, []Change, error) {
	objs := make([]*unstructured.Unstructured, 0, len(stale))
	versions := map[ObjMeta]string{}
	for _, s := range stale {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(s.Meta.GroupKind.WithVersion(s.Version))
		u.SetNamespace(s.Meta.Namespace)
		u.SetName(s.Meta.Name)
		objs = append(objs, u)
		versions[s.Meta] = s.Version
	}
	sortObjects(objs)
	var changes, failed []Change
	var errs []string
	for i := len(objs) - 1; i >= 0; i-- {
		u := objs[i]
		meta := MetaOf(u)
		c := Change{Meta: meta, Version: versions[meta], Action: Deleted}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		err := m.Client.Get(ctx, client.ObjectKeyFromObject(u), live)
		switch {
		case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err):
			// A kind the API server does not serve has no object left: an
			// entry recorded before its CRD was applied, or a removed CRD.
			changes = append(changes, c)
			continue
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s delete failed: %s", meta, reason(err)))
			failed = append(failed, c)
			continue
		}
		if !ownedBy(live, opts.OwnerLabels) || flag(live, PruneAnnotation) == "disabled" ||
			flag(live, ReconcileAnnotation) == "disabled" || flag(live, SSAAnnotation) == "ignore" {
			c.Action = Skipped
			changes = append(changes, c)
			continue
		}
		if err := m.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("%s delete failed: %s", meta, reason(err)))
			failed = append(failed, c)
			continue
		}
		changes = append(changes, c)
	}
	if len(errs) > 0 {
		return changes, failed, errors.New(strings.Join(errs, "\n"))
	}
	return changes, nil, nil
}

func ownedBy(u *unstructured.Unstructured, labels map[string]string) bool {
	if len(labels) == 0 {
		return false
	}
	for k, v := range labels {
		if u.GetLabels()[k] != v {
			return false
		}
	}
	return true
}

// deleteAndWait deletes live (background propagation) and waits until it is gone.
func (m *Manager) deleteAndWait(ctx context.Context, live *unstructured.Unstructured) error {
	if err := m.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return m.poll(ctx, func() (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(live.GroupVersionKind())
		err := m.Client.Get(ctx, client.ObjectKeyFromObject(live), got)
		return apierrors.IsNotFound(err), nil
	})
}
