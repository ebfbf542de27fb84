package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/health"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func hasPolicy(t *plan.Task, p string) bool {
	return slices.Contains(t.Policies, p)
}

// prepareHook readies a hook task for its apply: its object gets the
// hook finalizer, which marks it as running for this operation until the
// operation ends. adopted is true when the live hook already carries
// that finalizer: this operation created it before the controller
// restarted, so it is neither deleted nor applied again. Otherwise a live
// hook of the same name is deleted first when the hook's policy is
// BeforeHookCreation (argocd-contract §4.3).
func (r *ApplicationReconciler) prepareHook(ctx context.Context, t *plan.Task) (adopted bool, err error) {
	t.Obj = t.Obj.DeepCopy()
	if !slices.Contains(t.Obj.GetFinalizers(), argov1.FinalizerHook) {
		t.Obj.SetFinalizers(append(t.Obj.GetFinalizers(), argov1.FinalizerHook))
	}
	live, err := r.getLive(ctx, t.Obj.GroupVersionKind(), t.Obj.GetNamespace(), t.Obj.GetName())
	if err != nil || live == nil {
		return false, err
	}
	if slices.Contains(live.GetFinalizers(), argov1.FinalizerHook) && live.GetDeletionTimestamp() == nil {
		return true, nil
	}
	if !hasPolicy(t, plan.PolicyBeforeHookCreation) {
		return false, nil
	}
	return false, r.deleteAndWait(ctx, live)
}

// deleteAndWait deletes a hook of the same name from an earlier sync and
// waits until it is gone (BeforeHookCreation).
func (r *ApplicationReconciler) deleteAndWait(ctx context.Context, live *unstructured.Unstructured) error {
	gvk, ns, name := live.GroupVersionKind(), live.GetNamespace(), live.GetName()
	if err := r.removeHookFinalizer(ctx, live); err != nil {
		return err
	}
	if err := r.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting hook %s/%s: %s", gvk.Kind, name, apiReason(err))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		live, err := r.getLive(ctx, gvk, ns, name)
		if err != nil || live == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for deletion of hook %s/%s", gvk.Kind, name)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeHookFinalizer takes the hook finalizer off live, if it has it.
func (r *ApplicationReconciler) removeHookFinalizer(ctx context.Context, live *unstructured.Unstructured) error {
	fins := live.GetFinalizers()
	if !slices.Contains(fins, argov1.FinalizerHook) {
		return nil
	}
	orig := live.DeepCopy()
	live.SetFinalizers(slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == argov1.FinalizerHook }))
	if err := r.Client.Patch(ctx, live, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the hook finalizer of %s/%s: %s", live.GetKind(), live.GetName(), apiReason(err))
	}
	return nil
}

// stepDone checks an applied step: hooks must complete; in a multi-step
// sync every other object must be Healthy (argocd-contract §4.2 step 3).
// Each outcome is recorded in the task's result (hookPhase), so a
// finished task is not looked at again. The step fails only once nothing
// in it is running any more.
func (r *ApplicationReconciler) stepDone(ctx context.Context, run *syncRun, step plan.Step) (outcome, bool) {
	var waiting []string
	failed := false
	for _, t := range step.Tasks {
		res := run.results[taskKey(t)]
		if t.Prune || res.Status == argov1.ResultSyncFailed || (!t.Hook && !run.multi) {
			continue
		}
		if completed(res.HookPhase) {
			failed = failed || res.HookPhase != argov1.OperationSucceeded
			continue
		}
		live, err := r.getLive(ctx, t.Obj.GroupVersionKind(), t.Obj.GetNamespace(), t.Obj.GetName())
		if err != nil {
			return outcome{phase: argov1.OperationRunning, message: err.Error(), wait: pollWait}, false
		}
		name := fmt.Sprintf("%s/%s/%s", t.Obj.GroupVersionKind().Group, t.Obj.GetKind(), t.Obj.GetName())
		if live == nil {
			res.Status, res.HookPhase = argov1.ResultSyncFailed, argov1.OperationError
			res.Message = fmt.Sprintf("Resource %s is missing, it might have been deleted", name)
			failed = true
			continue
		}
		phase, msg := taskPhase(t, live)
		if msg != "" {
			res.Message = msg
		}
		res.HookPhase = phase
		switch phase {
		case argov1.OperationRunning:
			if t.Hook {
				name = "hook " + name
			}
			waiting = append(waiting, name)
		case argov1.OperationFailed, argov1.OperationError:
			failed = true
		}
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
	if failed {
		return outcome{phase: argov1.OperationFailed, message: "one or more synchronization tasks completed unsuccessfully"}, false
	}
	return outcome{}, true
}

// taskPhase is where an applied task stands by its live object's health:
// a hook Succeeded when Healthy (or without a health rule), Failed when
// Degraded or Unknown, else Running; any other object Succeeded when
// Healthy or without a rule, Failed when Degraded, else Running
// (argocd-contract §4.2 step 3).
func taskPhase(t *plan.Task, live *unstructured.Unstructured) (phase, message string) {
	if t.Hook {
		phase, message = health.HookStatus(live)
		if phase == argov1.OperationSucceeded && message == "" {
			message = strings.ToLower(live.GetKind()) + "/" + live.GetName() + " completed"
		}
		return phase, message
	}
	st, ok := health.Of(live)
	switch {
	case !ok || st.Status == argov1.HealthHealthy:
		return argov1.OperationSucceeded, st.Message
	case st.Status == argov1.HealthDegraded:
		return argov1.OperationFailed, st.Message
	}
	return argov1.OperationRunning, ""
}

// cleanupHooks ends the hooks of an operation: each loses the hook
// finalizer, and those whose delete policy asks for it are deleted:
// HookSucceeded when the operation succeeded, HookFailed when it failed
// (argocd-contract §4.3).
func (r *ApplicationReconciler) cleanupHooks(ctx context.Context, run *syncRun, succeeded bool) {
	if run.st.Operation.Sync.DryRun {
		return
	}
	want := plan.PolicyHookFailed
	if succeeded {
		want = plan.PolicyHookSucceeded
	}
	steps := append(slices.Clone(run.steps), run.failSteps)
	for _, step := range steps {
		for _, t := range step.Tasks {
			if !t.Hook || run.results[taskKey(t)] == nil {
				continue
			}
			live, err := r.getLive(ctx, t.Obj.GroupVersionKind(), t.Obj.GetNamespace(), t.Obj.GetName())
			if err != nil || live == nil {
				continue
			}
			if err := r.removeHookFinalizer(ctx, live); err != nil {
				r.Log.Info("hook cleanup", "error", err.Error())
			}
			if hasPolicy(t, want) {
				_ = r.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground))
			}
		}
	}
}

// terminateHooks is the end of an operation a user terminated
// (status.operationState.phase Terminating, argocd-contract §3.1): every
// hook it started that is still running is deleted, and every hook loses
// the hook finalizer. ok is false when a hook could not be ended.
func (r *ApplicationReconciler) terminateHooks(ctx context.Context, st *argov1.OperationState) (ok bool) {
	if st.SyncResult == nil {
		return true
	}
	ok = true
	for _, res := range st.SyncResult.Resources {
		if res.HookType == "" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
		live, err := r.getLive(ctx, gvk, res.Namespace, res.Name)
		if err != nil {
			ok = false
			continue
		}
		if live == nil {
			if !completed(res.HookPhase) {
				res.HookPhase, res.Message = argov1.OperationFailed, "Terminated"
			}
			continue
		}
		if err := r.removeHookFinalizer(ctx, live); err != nil {
			ok = false
			continue
		}
		if completed(res.HookPhase) {
			continue
		}
		if phase, msg := health.HookStatus(live); completed(phase) {
			res.HookPhase, res.Message = phase, msg
			continue
		}
		if err := r.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			ok = false
			continue
		}
		res.HookPhase, res.Message = argov1.OperationFailed, "Terminated"
	}
	return ok
}

// releaseHooks takes the hook finalizer off every hook of st's results,
// at the end of an attempt that did not succeed, so that no later
// operation mistakes them for its own.
func (r *ApplicationReconciler) releaseHooks(ctx context.Context, st *argov1.OperationState) {
	if st.SyncResult == nil {
		return
	}
	for _, res := range st.SyncResult.Resources {
		if res.HookType == "" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
		if live, err := r.getLive(ctx, gvk, res.Namespace, res.Name); err == nil && live != nil {
			if err := r.removeHookFinalizer(ctx, live); err != nil {
				r.Log.Info("hook cleanup", "error", err.Error())
			}
		}
	}
}
