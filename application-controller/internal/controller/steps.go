package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/project"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollWait is the wait between checks of a running step.
const pollWait = time.Second

// compareFor is the comparison at the operation's revision and source:
// c itself when they are the compared ones. Once the first pass resolved
// the revision (status.operationState.syncResult.revision) the operation
// stays on it, so a commit pushed meanwhile does not change a running
// sync (Argo CD resumes an operation the same way).
func (r *ApplicationReconciler) compareFor(ctx context.Context, app *argov1.Application, st *argov1.OperationState, c *comparison) (*comparison, error) {
	sync := st.Operation.Sync
	revision := sync.Revision
	if st.SyncResult != nil && st.SyncResult.Revision != "" && len(sync.Sources) == 0 && !app.IsMultiSource() {
		revision = st.SyncResult.Revision
	}
	// An auto-sync's operation carries the spec's own source: the
	// comparison just made serves it, with no second render and dry-run.
	sameSource := (sync.Source == nil || (app.Spec.Source != nil && len(app.Spec.Sources) == 0 && equality.Semantic.DeepEqual(*sync.Source, *app.Spec.Source))) &&
		(len(sync.Sources) == 0 || equality.Semantic.DeepEqual(sync.Sources, app.Spec.Sources))
	if sameSource && (revision == "" || (c.target != nil && len(c.target.revisions) > 0 && revision == c.target.revisions[0])) {
		return c, nil
	}
	pinned := app.DeepCopy()
	if sync.Source != nil {
		pinned.Spec.Source, pinned.Spec.Sources = sync.Source.DeepCopy(), nil
	}
	if len(sync.Sources) > 0 {
		pinned.Spec.Sources = sync.Sources
	}
	return r.compare(ctx, pinned, revision), nil
}

// prepare is the once-per-operation start: CreateNamespace, then a
// dry-run of every task to apply; any failure fails the operation before
// anything is written (argocd-contract §4.2 step 1). A dry-run sync
// creates no namespace and records each task's outcome with "(dry run)".
func (r *ApplicationReconciler) prepare(ctx context.Context, run *syncRun) (outcome, bool) {
	dry := run.st.Operation.Sync.DryRun
	created := map[string]bool{}
	if run.opts.CreateNamespace && dry {
		ns := run.app.Spec.Destination.Namespace
		if err := r.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			created[ns] = true // the server cannot dry-run into it
		}
	} else if run.opts.CreateNamespace {
		if err := r.createNamespace(ctx, run); err != nil {
			return outcome{phase: argov1.OperationFailed, message: err.Error()}, false
		}
	}
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
			if t.Prune || created[t.Obj.GetNamespace()] || inSetCRD(run.c, t.Obj) {
				if dry && !t.Hook && !t.Prune {
					action := ssa.Created
					if run.c.live[keyOf(t.Obj)] != nil {
						action = ssa.Configured
					}
					run.record(t, argov1.ResultSynced, taskName(t)+" "+string(action)+" (dry run)", "")
				}
				continue
			}
			action, err := r.dryRun(ctx, t)
			switch {
			case err != nil:
				reasons = append(reasons, run.record(t, argov1.ResultSyncFailed, err.Error(), "").Message)
			case dry && !t.Hook:
				run.record(t, argov1.ResultSynced, taskName(t)+" "+string(action)+" (dry run)", "")
			}
		}
	}
	if len(reasons) > 0 {
		// Argo CD's message names no object: the results do.
		return outcome{phase: argov1.OperationFailed, message: "one or more objects failed to apply (dry run)"}, false
	}
	return outcome{}, true
}

// taskName is kubectl's name of a task's object, e.g. configmap/payment-config.
func taskName(t *plan.Task) string {
	return strings.ToLower(t.Obj.GetKind()) + "/" + t.Obj.GetName()
}

// dryRun checks that t can be applied: an object by a server-side apply
// dry-run, a hook by a create dry-run (a hook is created anew, and one of
// an earlier sync still there is deleted or adopted first, so only its
// validity matters), as Argo CD dry-runs every task, hooks included. It
// returns what the apply would do (a hook: created).
func (r *ApplicationReconciler) dryRun(ctx context.Context, t *plan.Task) (ssa.Action, error) {
	if err := secretValueTypes(t.Obj); err != nil {
		return "", err
	}
	if !t.Hook {
		action, _, err := r.SSA.DryRun(ctx, t.Obj, ssa.ApplyOptions{})
		return action, err
	}
	obj := t.Obj.DeepCopy()
	err := r.Client.Create(ctx, obj, client.DryRunAll, client.FieldOwner(FieldManager))
	if err == nil || apierrors.IsAlreadyExists(err) {
		return ssa.Created, nil
	}
	return "", fmt.Errorf("%s/%s/%s dry-run failed: %s", t.Obj.GetKind(), t.Obj.GetNamespace(), t.Obj.GetName(), apiReason(err))
}

// secretValueTypes refuses a core Secret with a data or stringData value
// that is not a string (an unquoted number or boolean in YAML), naming
// the field but never the value: the API server's message would hold the
// value, and stringData's conversion would drop the key. Argo CD's kubectl
// apply is refused by the server's decoding the same way.
func secretValueTypes(u *unstructured.Unstructured) error {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return nil
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, ok := m[k].(string); !ok && m[k] != nil {
				return fmt.Errorf("Secret/%s/%s: .%s.%s: expected string, got %T (quote the value)", u.GetNamespace(), u.GetName(), field, k, m[k])
			}
		}
	}
	return nil
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
	// Read first (cached): Applications sharing a namespace would each get
	// a conflict from Create.
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), &corev1.Namespace{}); err == nil {
		return nil
	}
	if m := run.app.Spec.SyncPolicy; m != nil && m.ManagedNamespaceMetadata != nil {
		obj.Labels, obj.Annotations = m.ManagedNamespaceMetadata.Labels, m.ManagedNamespaceMetadata.Annotations
	}
	if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %s", ns, apiReason(err))
	}
	return nil
}

// applyStep applies (or prunes) the tasks of step that have no result.
// Hooks get the hook finalizer while they run; a BeforeHookCreation hook
// of an earlier sync is deleted first, but one that still carries the
// finalizer was created by this operation before a restart and is
// adopted, never created twice (argocd-contract §4.3). Replace=true
// objects are created or replaced whole instead of applied (§1.9).
func (r *ApplicationReconciler) applyStep(ctx context.Context, run *syncRun, step plan.Step) (outcome, bool) {
	var objs []*unstructured.Unstructured
	byKey := map[string]*plan.Task{}
	var reasons []string
	fail := func(t *plan.Task, err error, hookPhase string) {
		reasons = append(reasons, run.record(t, argov1.ResultSyncFailed, err.Error(), hookPhase).Message)
	}
	for _, t := range step.Tasks {
		if run.results[taskKey(t)] != nil {
			continue
		}
		if err := secretValueTypes(t.Obj); err != nil && !t.Prune {
			fail(t, err, "")
			continue
		}
		switch {
		case t.Prune:
			if msg, err := r.pruneOne(ctx, run, t); err != nil {
				fail(t, err, "")
			} else if msg != "" {
				run.record(t, argov1.ResultPruneSkipped, msg, "")
			} else {
				run.record(t, argov1.ResultPruned, "pruned", "")
			}
			continue
		case t.Hook:
			adopted, err := r.prepareHook(ctx, t)
			if err != nil {
				fail(t, err, argov1.OperationFailed)
				continue
			}
			if adopted {
				run.record(t, argov1.ResultSynced, taskName(t)+" created", argov1.OperationRunning)
				continue
			}
		case plan.ParseOptions(run.st.Operation.Sync.SyncOptions, t.Obj).Replace:
			if action, err := r.replace(ctx, t.Obj); err != nil {
				fail(t, err, "")
			} else {
				run.record(t, argov1.ResultSynced, taskName(t)+" "+action, "")
			}
			continue
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
				run.record(t, argov1.ResultSynced, taskName(t)+" "+string(ch.Action), hookPhase)
			}
		}
		if err != nil {
			for _, t := range byKey {
				if run.results[taskKey(t)] == nil {
					fail(t, err, "")
				}
			}
		}
	}
	if len(reasons) > 0 {
		return outcome{phase: argov1.OperationFailed, message: failedMessage("one or more objects failed to apply", reasons)}, false
	}
	return outcome{}, true
}

// replace creates u or replaces the live object by it (kubectl replace),
// as Replace=true asks; the action is "created" or "replaced".
func (r *ApplicationReconciler) replace(ctx context.Context, u *unstructured.Unstructured) (string, error) {
	live, err := r.getLive(ctx, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	if err != nil {
		return "", err
	}
	obj := u.DeepCopy()
	if live == nil {
		if err := r.Client.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
			return "", fmt.Errorf("%s/%s: %s", u.GetKind(), u.GetName(), apiReason(err))
		}
		return "created", nil
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	if err := r.Client.Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		return "", fmt.Errorf("%s/%s: %s", u.GetKind(), u.GetName(), apiReason(err))
	}
	return "replaced", nil
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
