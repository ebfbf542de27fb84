package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/pkg/redact"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// syncRun is one pass of a sync operation: its tasks in steps, and the
// results recorded so far in status.operationState.syncResult (which is
// what makes a pass resumable after a restart: a task with a result is
// never applied again).
type syncRun struct {
	app   *argov1.Application
	st    *argov1.OperationState
	c     *comparison
	opts  plan.Options
	steps []plan.Step
	multi bool
	// failSteps holds the SyncFail hooks, run only when the sync fails.
	failSteps plan.Step
	results   map[string]*argov1.ResourceResult
	// endedBefore holds the keys of the hooks whose end (a completed
	// hookPhase) the status this pass started from records already.
	endedBefore map[string]bool
	// secrets masks the values of the rendered Secrets in the messages
	// of failed tasks (secretValues), made at the first failure.
	secrets *redact.Values
}

// syncPass runs the next group of app's sync (argocd-contract §4.2): the
// first pass creates the namespace and dry-runs every task; each pass
// then finishes waiting on the current (phase, wave) or applies the next
// one. A failed step starts the SyncFail hooks; the operation fails once
// they completed (§4.1, §4.2 step 7). It ends, deleting hooks by their
// delete policy (§4.3), only on a pass that starts from a status
// recording every hook's end (unrecordedHookEnd).
func (r *ApplicationReconciler) syncPass(ctx context.Context, app *argov1.Application, st *argov1.OperationState, c *comparison) outcome {
	sync := st.Operation.Sync
	if len(sync.Manifests) > 0 {
		// Argo CD syncs these instead of the source (`argocd app sync
		// --local`); applying the source in their place would apply what
		// nobody asked for.
		return outcome{phase: argov1.OperationError, message: "syncing local manifests (operation.sync.manifests) is not supported by Eddy"}
	}
	c, err := r.compareFor(ctx, app, st, c)
	switch {
	case err != nil:
		return outcome{phase: argov1.OperationError, message: err.Error()}
	case c.pending:
		return outcome{phase: argov1.OperationRunning, message: "waiting for the source's artifact", wait: pollWait}
	case c.err != nil:
		return outcome{phase: argov1.OperationError, message: c.err.Error()}
	}
	run := r.newSyncRun(app, st, c)
	if run.opts.FailOnSharedResource && len(c.shared) > 0 {
		return outcome{phase: argov1.OperationFailed, message: "Shared resource found: " + c.shared[0]}
	}
	if len(st.SyncResult.Resources) == 0 {
		if out, ok := r.prepare(ctx, run); !ok {
			return out
		}
		if sync.DryRun {
			return outcome{phase: argov1.OperationSucceeded, message: "successfully synced (all tasks run)"}
		}
	}
	if run.failed() {
		return r.failPhase(ctx, run, "one or more synchronization tasks completed unsuccessfully")
	}
	gate := waveKey(app, st)
	for i, step := range run.steps {
		if !run.applied(step) {
			if wait := r.waves.remaining(gate, r.WaveDelay, r.clock()); i > 0 && wait > 0 {
				return outcome{phase: argov1.OperationRunning, message: st.Message, wait: wait}
			}
			if out, ok := r.applyStep(ctx, run, step); !ok {
				return r.failPhase(ctx, run, out.message)
			}
			switch {
			case i < len(run.steps)-1:
				r.waves.mark(gate, r.clock())
				return outcome{phase: argov1.OperationRunning, message: runningMessage(step), wait: max(r.WaveDelay, pollWait)}
			case hasHook(step):
				return outcome{phase: argov1.OperationRunning, message: runningMessage(step), wait: pollWait}
			}
			// The last step without hooks succeeds once applied, even in a
			// multi-step sync (Argo CD's rule).
			continue
		}
		if i == len(run.steps)-1 && !hasHook(step) {
			continue // applied by a pass that then waited to record a hook's end
		}
		if out, done := r.stepDone(ctx, run, step); !done {
			if out.phase != argov1.OperationRunning {
				return r.failPhase(ctx, run, out.message)
			}
			return out
		}
	}
	if run.unrecordedHookEnd() {
		return outcome{phase: argov1.OperationRunning, message: run.st.Message, wait: time.Millisecond}
	}
	r.cleanupHooks(ctx, run, true)
	return outcome{phase: argov1.OperationSucceeded, message: "successfully synced (all tasks run)"}
}

// failPhase ends a failed sync: it runs the SyncFail hooks (applied once,
// then awaited), deletes the hooks whose policy is HookFailed and fails
// with message and the reasons of the tasks that failed to apply.
func (r *ApplicationReconciler) failPhase(ctx context.Context, run *syncRun, message string) outcome {
	if !strings.Contains(message, ", reason: ") {
		message = failedMessage(message, run.applyFailures())
	}
	if run.failSteps.Tasks != nil && !run.st.Operation.Sync.DryRun {
		if !run.applied(run.failSteps) {
			if out, ok := r.applyStep(ctx, run, run.failSteps); !ok {
				message += "\none or more SyncFail hooks failed, reason: " + strings.TrimPrefix(out.message, "one or more objects failed to apply, reason: ")
			} else {
				return outcome{phase: argov1.OperationRunning, message: runningMessage(run.failSteps), wait: pollWait}
			}
		} else if out, done := r.stepDone(ctx, run, run.failSteps); !done {
			if out.phase == argov1.OperationRunning {
				return out
			}
			message += "\none or more SyncFail hooks failed"
		}
	}
	if run.unrecordedHookEnd() {
		return outcome{phase: argov1.OperationRunning, message: run.st.Message, wait: time.Millisecond}
	}
	r.cleanupHooks(ctx, run, false)
	return outcome{phase: argov1.OperationFailed, message: message}
}

// waveGate remembers when each running operation applied its last step,
// so that the next one starts WaveDelay later (argocd-contract §4.2 step
// 5: Argo CD sleeps between waves so that other controllers see the
// change first). In memory only: after a restart the next step does not
// wait.
type waveGate struct {
	mu sync.Mutex
	at map[string]time.Time
}

func waveKey(app *argov1.Application, st *argov1.OperationState) string {
	return fmt.Sprintf("%s/%s@%d", app.Namespace, app.Name, st.StartedAt.Unix())
}

// remaining is the wait left before key's next step.
func (g *waveGate) remaining(key string, delay time.Duration, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.at[key]
	if !ok {
		return 0
	}
	return at.Add(delay).Sub(now)
}

func (g *waveGate) mark(key string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at == nil {
		g.at = map[string]time.Time{}
	}
	g.at[key] = now
}

func (g *waveGate) forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.at, key)
}

// newSyncRun builds the tasks of the operation from the comparison.
func (r *ApplicationReconciler) newSyncRun(app *argov1.Application, st *argov1.OperationState, c *comparison) *syncRun {
	sync := st.Operation.Sync
	if st.SyncResult == nil {
		st.SyncResult = &argov1.SyncOperationResult{}
		if app.IsMultiSource() || len(sync.Sources) > 0 {
			st.SyncResult.Revisions, st.SyncResult.Sources = c.target.revisions, c.target.sources
		} else {
			st.SyncResult.Revision, st.SyncResult.Source = c.target.revisions[0], c.target.sources[0]
		}
	}
	run := &syncRun{app: app, st: st, c: c, opts: plan.ParseOptions(sync.SyncOptions, nil), results: map[string]*argov1.ResourceResult{}}
	run.endedBefore = map[string]bool{}
	for _, res := range st.SyncResult.Resources {
		k := resultKey(res.SyncPhase, plan.Key(res.Group, res.Kind, res.Namespace, res.Name))
		run.results[k] = res
		if res.HookType != "" && completed(res.HookPhase) {
			run.endedBefore[k] = true
		}
	}
	hooks := len(sync.Resources) == 0 && (sync.SyncStrategy == nil || sync.SyncStrategy.Apply == nil)
	desired := map[string]*unstructured.Unstructured{}
	for k, u := range c.desired {
		// ApplyOutOfSyncOnly leaves out the Synced objects, but not those
		// this operation applied already: their health is still awaited.
		skip := run.opts.ApplyOutOfSyncOnly && c.status[k] == argov1.SyncStatusSynced && run.results[resultKey(plan.PhaseSync, k)] == nil
		if selected(sync.Resources, u) && !skip {
			desired[k] = u
		}
	}
	if hooks {
		for _, u := range c.hooks {
			name := u.GetName()
			if name == "" {
				name = u.GetGenerateName()
			}
			desired[plan.Key(u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), name)] = u
		}
	}
	var prune []*unstructured.Unstructured
	for _, u := range c.prune {
		if selected(sync.Resources, u) {
			prune = append(prune, u)
		}
	}
	tasks := plan.Tasks(desired, c.live, prune, revisionOf(st), st.StartedAt.Time, sync.SyncOptions, hooks)
	plan.Sort(tasks)
	for _, step := range plan.Steps(tasks) {
		if step.Phase == plan.PhaseSyncFail {
			run.failSteps.Phase = step.Phase
			run.failSteps.Tasks = append(run.failSteps.Tasks, step.Tasks...)
			continue
		}
		run.steps = append(run.steps, step)
	}
	run.multi = plan.MultiStep(run.steps)
	return run
}

// selected: a selective sync's resources name u (namespace optional).
func selected(rs []argov1.SyncOperationResource, u *unstructured.Unstructured) bool {
	if len(rs) == 0 {
		return true
	}
	for _, s := range rs {
		if s.Group == u.GroupVersionKind().Group && s.Kind == u.GetKind() && s.Name == u.GetName() &&
			(s.Namespace == "" || s.Namespace == u.GetNamespace()) {
			return true
		}
	}
	return false
}

func revisionOf(st *argov1.OperationState) string {
	if st.SyncResult.Revision != "" {
		return st.SyncResult.Revision
	}
	if len(st.SyncResult.Revisions) > 0 {
		return st.SyncResult.Revisions[0]
	}
	return ""
}

func resultKey(phase, key string) string { return phase + "|" + key }

func taskKey(t *plan.Task) string {
	return resultKey(t.Phase, keyOf(t.Obj))
}

// applied: every task of step has a result.
func (run *syncRun) applied(step plan.Step) bool {
	for _, t := range step.Tasks {
		if run.results[taskKey(t)] == nil {
			return false
		}
	}
	return true
}

// failed: a task of an earlier pass failed to apply or completed
// unsuccessfully (the SyncFail hooks are then running).
func (run *syncRun) failed() bool {
	for _, step := range run.steps {
		for _, t := range step.Tasks {
			if res := run.results[taskKey(t)]; res != nil && (res.Status == argov1.ResultSyncFailed ||
				res.HookPhase == argov1.OperationFailed || res.HookPhase == argov1.OperationError) {
				return true
			}
		}
	}
	return false
}

// unrecordedHookEnd: this pass saw a hook end (Succeeded, Failed or
// Error), and the status it started from does not record that yet. The operation then ends on the next pass, after this one's status
// is written: ending it releases and deletes hooks (their delete policy),
// and a hook deleted before its end is written would be found missing
// after a restart, failing a sync that succeeded (Argo CD records the end
// and deletes in one pass; this order closes that window).
func (run *syncRun) unrecordedHookEnd() bool {
	for k, res := range run.results {
		if res.HookType != "" && res.Status != argov1.ResultSyncFailed && completed(res.HookPhase) && !run.endedBefore[k] {
			return true
		}
	}
	return false
}

// applyFailures are the messages of the tasks that failed to apply, the
// reasons of a failed operation (Argo CD names only those).
func (run *syncRun) applyFailures() []string {
	var out []string
	for _, step := range run.steps {
		for _, t := range step.Tasks {
			if res := run.results[taskKey(t)]; res != nil && res.Status == argov1.ResultSyncFailed && !slices.Contains(out, res.Message) {
				out = append(out, res.Message)
			}
		}
	}
	return out
}

func hasHook(step plan.Step) bool {
	for _, t := range step.Tasks {
		if t.Hook {
			return true
		}
	}
	return false
}

// record adds or replaces a task's result. A failure's message has the
// values of the rendered Secrets masked (run.secrets).
func (run *syncRun) record(t *plan.Task, status, message, hookPhase string) *argov1.ResourceResult {
	if status == argov1.ResultSyncFailed {
		if run.secrets == nil {
			run.secrets = secretValues(run.c)
		}
		message = run.secrets.Mask(message)
	}
	gvk := t.Obj.GroupVersionKind()
	res := &argov1.ResourceResult{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: t.Obj.GetNamespace(),
		Name: t.Obj.GetName(), Status: status, Message: message, SyncPhase: t.Phase, HookPhase: hookPhase}
	if t.Hook {
		res.HookType = t.Phase
	}
	imgs := map[string]bool{}
	collectImages(t.Obj, imgs)
	res.Images = sortedKeys(imgs)
	k := taskKey(t)
	if old := run.results[k]; old != nil {
		*old = *res
		return old
	}
	run.results[k] = res
	run.st.SyncResult.Resources = append(run.st.SyncResult.Resources, res)
	return res
}

// runningMessage is Argo CD's message while a step is awaited.
func runningMessage(step plan.Step) string {
	var names []string
	for _, t := range step.Tasks {
		names = append(names, fmt.Sprintf("%s/%s/%s", t.Obj.GroupVersionKind().Group, t.Obj.GetKind(), t.Obj.GetName()))
	}
	if len(names) == 0 {
		return "running"
	}
	msg := "waiting for healthy state of " + names[0]
	if step.Tasks[0].Hook {
		msg = "waiting for completion of hook " + names[0]
	}
	if len(names) > 1 {
		msg += fmt.Sprintf(" and %d more resources", len(names)-1)
	}
	return msg
}

// failedMessage is prefix with the reasons, comma separated as Argo CD
// joins them.
func failedMessage(prefix string, reasons []string) string {
	if len(reasons) == 0 {
		return prefix
	}
	return prefix + ", reason: " + strings.Join(reasons, ",")
}
