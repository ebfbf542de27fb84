package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/ssa"
)

// apply applies objs with c (ssa.Manager.ApplyAll: the set dry-run, then
// what changed written; beforeWrite runs between the two) and reports the
// changes. A failure lists what a partial apply changed (secrets masked)
// and returns those changes.
func (r *KustomizationReconciler) apply(ctx context.Context, obj *kustomizev1.Kustomization, c client.Client, objs []*unstructured.Unstructured,
	secrets *redact.Values, rec *events.Recorder, beforeWrite func()) (*ssa.Manager, []ssa.Change, *failure) {
	ignore, err := kustomize.IgnoreRules(obj.Spec.Ignore)
	if err != nil {
		return nil, nil, fail(meta.ReconciliationFailedReason, "%s", err).Stall()
	}
	mgr := &ssa.Manager{Client: c, Owner: FieldManager, Poll: time.Second, Concurrency: r.ConcurrentSSA}
	if _, requested := requestPending(obj); obj.Spec.KubeConfig == nil && !requested {
		// Objects found unchanged before are not dry-run again while
		// neither they nor Git changed (ssa.UnchangedMemo); the scope keeps
		// each Kustomization and the identity it applies as apart. A
		// requested reconcile (`flux reconcile`) dry-runs everything.
		mgr.Memo, mgr.MemoScope = r.unchanged, obj.Namespace+"/"+obj.Name+"\x00"+r.serviceAccount(obj)
		mgr.ListLabels = []string{NameLabel, NamespaceLabel}
	}
	changes, err := mgr.ApplyAll(ctx, objs, ssa.ApplyOptions{Force: obj.Spec.Force, Ignore: ignore, BeforeWrite: beforeWrite})
	r.reportChanges(rec, obj, changes, secrets)
	if err != nil {
		// Flux compatible: a partial apply lists what it changed; values
		// substituted from Secrets are masked (v1.9.6).
		msg := err.Error()
		for _, ch := range changes {
			if ch.Action != ssa.Unchanged && ch.Action != ssa.Skipped {
				msg += "\n" + ch.String()
			}
		}
		return nil, changes, fail(meta.ReconciliationFailedReason, "%s", secrets.Mask(msg))
	}
	return mgr, changes, nil
}

// prune writes the inventory of what was applied (changes) and, with
// spec.prune, deletes the objects of the last inventory this apply did not
// write; one that could not be deleted stays in the inventory and fails
// with PruneFailed.
func (r *KustomizationReconciler) prune(ctx context.Context, obj *kustomizev1.Kustomization, mgr *ssa.Manager, changes []ssa.Change, rec *events.Recorder) *failure {
	inventory := map[string]kustomizev1.ResourceRef{}
	for _, ch := range changes {
		inventory[ch.Meta.ID()] = kustomizev1.ResourceRef{ID: ch.Meta.ID(), Version: ch.Version}
	}
	var pruneErr error
	if stale := staleObjects(ctx, obj, changes); len(stale) > 0 {
		deleted, failed, err := mgr.DeleteStale(ctx, stale, ssa.PruneOptions{OwnerLabels: map[string]string{NameLabel: obj.Name, NamespaceLabel: obj.Namespace}})
		r.reportChanges(rec, obj, deleted, nil)
		for _, fc := range failed {
			inventory[fc.Meta.ID()] = kustomizev1.ResourceRef{ID: fc.Meta.ID(), Version: fc.Version}
		}
		pruneErr = err
	}
	obj.Status.Inventory = &kustomizev1.ResourceInventory{Entries: sortedEntries(inventory)}
	if pruneErr != nil {
		return fail(meta.PruneFailedReason, "%s", pruneErr)
	}
	return nil
}

// staleObjects are, with spec.prune, the entries of obj's inventory that
// applied does not hold, in inventory order; an entry that is no object id
// is logged and left.
func staleObjects(ctx context.Context, obj *kustomizev1.Kustomization, applied []ssa.Change) []ssa.Change {
	if !obj.Spec.Prune || obj.Status.Inventory == nil {
		return nil
	}
	metas := make([]ssa.ObjMeta, 0, len(applied))
	for _, ch := range applied {
		metas = append(metas, ch.Meta)
	}
	ids := make([]string, 0, len(obj.Status.Inventory.Entries))
	for _, e := range obj.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	staleByID, invalid := ssa.Stale(ids, metas)
	for _, id := range invalid {
		ctrl.LoggerFrom(ctx).Info("skipping an inventory entry that is no object id; its object is not pruned", "id", id)
	}
	var stale []ssa.Change
	for _, e := range obj.Status.Inventory.Entries {
		if m, ok := staleByID[e.ID]; ok {
			stale = append(stale, ssa.Change{Meta: m, Version: e.Version})
		}
	}
	return stale
}

// deletedWhenDone are the IDs of the objects of objs that are deleted once
// finished (a Job with a TTL): Flux compatible, the health check does not
// wait for such an object that is gone.
func deletedWhenDone(objs []*unstructured.Unstructured) map[string]bool {
	ids := map[string]bool{}
	for _, u := range objs {
		if health.DeletedWhenFinished(u) {
			ids[ssa.MetaOf(u).ID()] = true
		}
	}
	return ids
}

func sortedEntries(m map[string]kustomizev1.ResourceRef) []kustomizev1.ResourceRef {
	out := make([]kustomizev1.ResourceRef, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// serviceAccount is the account impersonated for obj: spec.serviceAccountName,
// else --default-service-account; "" for the controller's own.
func (r *KustomizationReconciler) serviceAccount(obj *kustomizev1.Kustomization) string {
	if sa := obj.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return r.DefaultServiceAccount
}

// clientFor returns the client that applies, prunes, corrects drift and
// checks health: the remote cluster's of spec.kubeConfig.secretRef (cached,
// see remoteClients) when set, else this cluster's; impersonating
// spec.serviceAccountName (or the default) when set, on the remote cluster
// when there is one. A remote cluster must answer first. Flux compatible
// (fluxcd/pkg/runtime/client Impersonator).
func (r *KustomizationReconciler) clientFor(ctx context.Context, obj *kustomizev1.Kustomization) (client.Client, error) {
	impersonate := ""
	if sa := r.serviceAccount(obj); sa != "" {
		impersonate = fmt.Sprintf("system:serviceaccount:%s:%s", obj.Namespace, sa)
	}
	if kc := obj.Spec.KubeConfig; kc != nil {
		if kc.SecretRef == nil {
			return nil, errors.New("spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet; use spec.kubeConfig.secretRef")
		}
		data, err := kubeConfigData(ctx, r.Client, obj.Namespace, kc)
		if err != nil {
			return nil, err
		}
		rc, err := r.remotes.get(r, obj.Namespace, kc, data, impersonate)
		if err != nil {
			return nil, err
		}
		if err := rc.probe(ctx, obj.Namespace+"/"+kc.SecretRef.Name); err != nil {
			return nil, err
		}
		return rc.client, nil
	}
	if impersonate == "" || r.Config == nil {
		return r.Client, nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate}
	return client.New(cfg, client.Options{Scheme: r.Scheme(), Mapper: r.RESTMapper()})
}

// statusWrites are the status writes a reconcile makes while it runs:
// progress sets Ready Unknown with a message and starts writing the status
// (reconciler.StatusPatcher.Start); save writes it as it stands (nothing
// is sent when nothing changed).
type statusWrites struct {
	progress func(string)
	save     func() error
	// settle waits for a progress write still under way.
	settle func()
}

// recordIntent adds to obj's inventory each object of objs it does not
// name yet (ssa.Manager.Intended, as applied with c) and reports whether
// it added any. The entries stay until a reconcile's prune writes the
// inventory of what it applied: an object applied and then removed from
// Git is pruned even when the process died before that write. Beyond
// Flux, which records the inventory only after the apply.
func recordIntent(obj *kustomizev1.Kustomization, c client.Client, objs []*unstructured.Unstructured) bool {
	entries := map[string]kustomizev1.ResourceRef{}
	if obj.Status.Inventory != nil {
		for _, e := range obj.Status.Inventory.Entries {
			entries[e.ID] = e
		}
	}
	grew := false
	for _, ch := range (&ssa.Manager{Client: c}).Intended(objs) {
		if _, ok := entries[ch.Meta.ID()]; !ok {
			entries[ch.Meta.ID()] = kustomizev1.ResourceRef{ID: ch.Meta.ID(), Version: ch.Version}
			grew = true
		}
	}
	if grew {
		obj.Status.Inventory = &kustomizev1.ResourceInventory{Entries: sortedEntries(entries)}
	}
	return grew
}
