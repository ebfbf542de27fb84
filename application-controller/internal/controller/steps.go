package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/health"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/project"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollWait is the wait between checks of a running step.
const pollWait = time.Second

// compareFor is the comparison at the operation's revision and source:
// c itself when they are the compared ones.
func (r *ApplicationReconciler) compareFor(ctx context.Context, app *argov1.Application, sync *argov1.SyncOperation, c *comparison) (*comparison, error) {
	if sync.Source == nil && len(sync.Sources) == 0 && (sync.Revision == "" || (c.target != nil && len(c.target.revisions) > 0 && sync.Revision == c.target.revisions[0])) {
		return c, nil
	}
	pinned := app.DeepCopy()
	if sync.Source != nil {
		pinned.Spec.Source, pinned.Spec.Sources = sync.Source.DeepCopy(), nil
	}
	if len(sync.Sources) > 0 {
		pinned.Spec.Sources = sync.Sources
	}
	return r.compare(ctx, pinned, sync.Revision), nil
}

// prepare is the once-per-operation start: CreateNamespace, then a
// dry-run of every task to apply; any failure fails the operation before
// anything is written (argocd-contract §4.2 step 1).
func (r *ApplicationReconciler) prepare(ctx context.Context, run *syncRun) (outcome, bool) {
	if run.opts.CreateNamespace {
		if err := r.createNamespace(ctx, run); err != nil {
			return outcome{phase: argov1.OperationFailed, message: err.Error()}, false
		}
	}
	created := map[string]bool{}
	for _, step := range run.steps {
		for _, t := range step.Tasks {
			if t.Obj.GetKind() == "Namespace" || t.Obj.GetKind() == "CustomResourceDefinition" {
				created[t.Obj.GetName()] = true
			}
		}
	}
	var reasons []string
	for _, step := range run.steps {
		for _, t := range step.Tasks {
			if t.Prune || t.Hook || created[t.Obj.GetNamespace()] || inSetCRD(run.c, t.Obj) {
				continue
			}
			if _, _, err := r.SSA.DryRun(ctx, t.Obj, ssa.ApplyOptions{}); err != nil {
				run.record(t, argov1.ResultSyncFailed, err.Error(), "")
				reasons = append(reasons, err.Error())
			}
		}
	}
	if len(reasons) > 0 {
		return outcome{phase: argov1.OperationFailed, message: failedMessage("one or more objects failed to apply (dry run)", reasons)}, false
	}
	return outcome{}, true
}

// inSetCRD: u is a custom resource whose CRD is in the same sync.
func inSetCRD(c *comparison, u *unstructured.Unstructured) bool {
	_, ok := crdScopes(c.target.objects)[u.GroupVersionKind().GroupKind()]
	return ok
}

// createNamespace creates the destination namespace (untracked, so never
// pruned) with managedNamespaceMetadata (argocd-contract §1.9).
func (r *ApplicationReconciler) createNamespace(ctx context.Context, run *syncRun) error {
	ns := run.app.Spec.Destination.Namespace
	if ns == "" {
		return nil
	}
	if !project.Permitted(run.c.project, "", "Namespace", ns, true) {
		return fmt.Errorf("namespace %s is not permitted in project '%s'", ns, run.c.project.Name)
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if m := run.app.Spec.SyncPolicy; m != nil && m.ManagedNamespaceMetadata != nil {
		obj.Labels, obj.Annotations = m.ManagedNamespaceMetadata.Labels, m.ManagedNamespaceMetadata.Annotations
	}
	if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %s", ns, apiReason(err))
	}
	return nil
}

// applyStep applies (or prunes) the tasks of step that have no result.
func (r *ApplicationReconciler) applyStep(ctx context.Context, run *syncRun, step plan.Step) (outcome, bool) {
	var objs []*unstructured.Unstructured
	byKey := map[string]*plan.Task{}
	var reasons []string
	for _, t := range step.Tasks {
		if run.results[taskKey(t)] != nil {
			continue
		}
		switch {
		case t.Prune:
			if msg, err := r.pruneOne(ctx, run, t); err != nil {
				run.record(t, argov1.ResultSyncFailed, err.Error(), "")
				reasons = append(reasons, err.Error())
			} else if msg != "" {
				run.record(t, argov1.ResultPruneSkipped, msg, "")
			} else {
				run.record(t, argov1.ResultPruned, "pruned", "")
			}
			continue
		case t.Hook && hasPolicy(t, plan.PolicyBeforeHookCreation):
			if err := r.deleteAndWait(ctx, t.Obj); err != nil {
				run.record(t, argov1.ResultSyncFailed, err.Error(), argov1.OperationFailed)
				reasons = append(reasons, err.Error())
				continue
			}
		}
		objs = append(objs, t.Obj)
		byKey[keyOf(t.Obj)] = t
	}
	if len(objs) > 0 {
		changes, err := r.SSA.ApplyAll(ctx, objs, ssa.ApplyOptions{Force: run.opts.Force})
		for _, ch := range changes {
			if t := byKey[plan.Key(ch.Meta.GroupKind.Group, ch.Meta.GroupKind.Kind, ch.Meta.Namespace, ch.Meta.Name)]; t != nil {
				hookPhase := ""
				if t.Hook {
					hookPhase = argov1.OperationRunning
				}
				run.record(t, argov1.ResultSynced, strings.ToLower(t.Obj.GetKind())+"/"+t.Obj.GetName()+" "+string(ch.Action), hookPhase)
			}
		}
		if err != nil {
			for _, t := range byKey {
				if run.results[taskKey(t)] == nil {
					run.record(t, argov1.ResultSyncFailed, err.Error(), "")
				}
			}
			reasons = append(reasons, err.Error())
		}
	}
	if len(reasons) > 0 {
		return outcome{phase: argov1.OperationFailed, message: failedMessage("one or more objects failed to apply", reasons)}, false
	}
	return outcome{}, true
}

// pruneOne deletes a pruning candidate unless pruning is off for it; msg
// is the PruneSkipped message then.
func (r *ApplicationReconciler) pruneOne(ctx context.Context, run *syncRun, t *plan.Task) (string, error) {
	opts := plan.ParseOptions(run.st.Operation.Sync.SyncOptions, t.Obj)
	if !run.st.Operation.Sync.Prune {
		return "ignored (requires pruning)", nil
	}
	if plan.PruneDisabled(t.Obj, run.st.Operation.Sync.SyncOptions) {
		return "ignored (no prune)", nil
	}
	prop := metav1.DeletePropagationForeground
	switch strings.ToLower(opts.PrunePropagationPolicy) {
	case "background":
		prop = metav1.DeletePropagationBackground
	case "orphan":
		prop = metav1.DeletePropagationOrphan
	}
	err := r.Client.Delete(ctx, t.Obj, client.PropagationPolicy(prop))
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%s/%s: %s", t.Obj.GetKind(), t.Obj.GetName(), apiReason(err))
	}
	return "", nil
}

func hasPolicy(t *plan.Task, p string) bool {
	for _, x := range t.Policies {
		if x == p {
			return true
		}
	}
	return false
}

// deleteAndWait deletes a hook of the same name from an earlier sync and
// waits until it is gone (BeforeHookCreation).
func (r *ApplicationReconciler) deleteAndWait(ctx context.Context, u *unstructured.Unstructured) error {
	live, err := r.getLive(ctx, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	if err != nil || live == nil {
		return err
	}
	if err := r.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting hook %s/%s: %s", u.GetKind(), u.GetName(), apiReason(err))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		live, err := r.getLive(ctx, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
		if err != nil || live == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for deletion of hook %s/%s", u.GetKind(), u.GetName())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stepDone checks an applied step: hooks must complete; in a multi-step
// sync every other object must be Healthy (argocd-contract §4.2 step 3).
func (r *ApplicationReconciler) stepDone(ctx context.Context, run *syncRun, step plan.Step) (outcome, bool) {
	var waiting, failed []string
	for _, t := range step.Tasks {
		res := run.results[taskKey(t)]
		if t.Prune || res.Status == argov1.ResultSyncFailed || (!t.Hook && !run.multi) {
			continue
		}
		if t.Hook && completed(res.HookPhase) {
			if res.HookPhase != argov1.OperationSucceeded {
				failed = append(failed, res.Message)
			}
			continue
		}
		live, err := r.getLive(ctx, t.Obj.GroupVersionKind(), t.Obj.GetNamespace(), t.Obj.GetName())
		if err != nil {
			return outcome{phase: argov1.OperationRunning, message: err.Error(), wait: pollWait}, false
		}
		name := fmt.Sprintf("%s/%s/%s", t.Obj.GroupVersionKind().Group, t.Obj.GetKind(), t.Obj.GetName())
		if t.Hook {
			phase := argov1.OperationRunning
			if live != nil {
				phase = health.HookPhase(live)
			}
			res.HookPhase = phase
			switch phase {
			case argov1.OperationSucceeded:
				res.Message = strings.ToLower(t.Obj.GetKind()) + "/" + t.Obj.GetName() + " completed"
			case argov1.OperationFailed, argov1.OperationError:
				st, _ := health.Of(live)
				res.Status, res.Message = argov1.ResultSyncFailed, st.Message
				failed = append(failed, name+": "+st.Message)
			default:
				waiting = append(waiting, "hook "+name)
			}
			continue
		}
		st, ok := health.Of(live)
		switch {
		case live == nil:
			waiting = append(waiting, name)
		case !ok || st.Status == argov1.HealthHealthy:
		case st.Status == argov1.HealthDegraded:
			failed = append(failed, name+": "+st.Message)
		default:
			waiting = append(waiting, name)
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return outcome{phase: argov1.OperationFailed, message: failedMessage("one or more synchronization tasks completed unsuccessfully", failed)}, false
	}
	if len(waiting) > 0 {
		msg := "waiting for healthy state of " + waiting[0]
		if strings.HasPrefix(waiting[0], "hook ") {
			msg = "waiting for completion of " + waiting[0]
		}
		if len(waiting) > 1 {
			msg += fmt.Sprintf(" and %d more resources", len(waiting)-1)
		}
		return outcome{phase: argov1.OperationRunning, message: msg, wait: pollWait}, false
	}
	return outcome{}, true
}

// cleanupHooks deletes, at the end of an operation, the hooks whose delete
// policy asks for it: HookSucceeded on success, HookFailed on failure
// (argocd-contract §4.3). With run nil (terminated) it deletes every hook
// the operation created that is still running.
func (r *ApplicationReconciler) cleanupHooks(ctx context.Context, st *argov1.OperationState, run *syncRun, succeeded bool) {
	if run == nil || st.Operation.Sync.DryRun {
		return
	}
	want := plan.PolicyHookFailed
	if succeeded {
		want = plan.PolicyHookSucceeded
	}
	for _, step := range run.steps {
		for _, t := range step.Tasks {
			if t.Hook && hasPolicy(t, want) && run.results[taskKey(t)] != nil {
				_ = r.Client.Delete(ctx, t.Obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
			}
		}
	}
}
