package controller

import (
	"fmt"
	"slices"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultAutoSyncRetry is the retry of an auto-sync whose spec sets none
// (argocd-contract §1.9).
var defaultAutoSyncRetry = argov1.RetryStrategy{Limit: 5}

// autoSync decides, after a comparison, whether automated sync starts an
// operation (argocd-contract §3.3). It returns true when it set
// app.Operation, or else the wait before a self-heal may start (0: none).
func (r *ApplicationReconciler) autoSync(app *argov1.Application, c *comparison) (time.Duration, bool) {
	now := metav1.NewTime(r.clock())
	found := map[string]string{}
	defer func() { setConditions(&app.Status, []string{argov1.ConditionSyncError}, found, now) }()
	if !app.IsAutomated() || c.sync != argov1.SyncStatusOutOfSync {
		return 0, false
	}
	auto := app.Spec.SyncPolicy.Automated
	outOfSync, onlyPrune := r.outOfSyncResources(c)
	if !auto.IsPrune() && onlyPrune {
		return 0, false
	}
	if auto.IsPrune() && !auto.IsAllowEmpty() && len(c.desired) == 0 && len(c.prune) > 0 {
		found[argov1.ConditionSyncError] = fmt.Sprintf("Skipping sync attempt to %v: auto-sync will wipe out all resources", c.target.revisions)
		return 0, false
	}
	op := &argov1.Operation{
		Sync: &argov1.SyncOperation{
			Revision: c.target.revisions[0], Prune: auto.IsPrune(), SyncOptions: app.GetSyncOptions(),
		},
		InitiatedBy: argov1.OperationInitiator{Automated: true},
		Retry:       defaultAutoSyncRetry,
	}
	if app.IsMultiSource() {
		op.Sync.Revision, op.Sync.Revisions, op.Sync.Sources = "", c.target.revisions, app.Spec.Sources
	} else {
		op.Sync.Source = app.Spec.Source.DeepCopy()
	}
	if p := app.Spec.SyncPolicy.Retry; p != nil {
		op.Retry = *p
	}
	if last := app.Status.OperationState; last != nil && r.alreadyAttempted(app, last, c) {
		if last.Phase != argov1.OperationSucceeded {
			found[argov1.ConditionSyncError] = fmt.Sprintf("Failed last sync attempt to %v: %s", c.target.revisions, last.Message)
			return 0, false
		}
		if !auto.IsSelfHeal() {
			return 0, false
		}
		attempts := last.Operation.Sync.SelfHealAttemptsCount
		if last.FinishedAt != nil {
			if wait := last.FinishedAt.Add(r.SelfHeal.Wait(attempts)).Sub(now.Time); wait > 0 {
				return wait, false
			}
		}
		op.Sync.Resources = outOfSync
		op.Sync.SelfHealAttemptsCount = attempts + 1
	}
	app.Operation = op
	r.event(app, corev1.EventTypeNormal, ReasonOperationStarted, fmt.Sprintf("Initiated automated sync to '%s'", revisionList(c.target.revisions)))
	return 0, true
}

// alreadyAttempted: the last operation synced the same revisions of the
// same sources (argocd-contract §3.3 step 5).
func (r *ApplicationReconciler) alreadyAttempted(app *argov1.Application, last *argov1.OperationState, c *comparison) bool {
	res := last.SyncResult
	if res == nil || last.Operation.Sync == nil {
		return false
	}
	if app.IsMultiSource() {
		return slices.Equal(res.Revisions, c.target.revisions) && equality.Semantic.DeepEqual(res.Sources, app.Spec.Sources)
	}
	return res.Revision == c.target.revisions[0] && app.Spec.Source != nil && equality.Semantic.DeepEqual(res.Source, *app.Spec.Source)
}

// outOfSyncResources lists the objects that are not Synced, and whether
// every one of them only needs pruning.
func (r *ApplicationReconciler) outOfSyncResources(c *comparison) ([]argov1.SyncOperationResource, bool) {
	var out []argov1.SyncOperationResource
	onlyPrune := true
	for _, rs := range c.resources {
		if rs.Status == argov1.SyncStatusSynced {
			continue
		}
		out = append(out, argov1.SyncOperationResource{Group: rs.Group, Kind: rs.Kind, Name: rs.Name, Namespace: rs.Namespace})
		if !rs.RequiresPruning {
			onlyPrune = false
		}
	}
	return out, onlyPrune
}

func revisionList(revs []string) string {
	if len(revs) == 1 {
		return revs[0]
	}
	return fmt.Sprintf("%v", revs)
}
