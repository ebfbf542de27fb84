package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// outcome is where a sync stands after one pass.
type outcome struct {
	phase   string // Running, Succeeded, Failed or Error
	message string
	wait    time.Duration // before the next pass, while Running
}

// runOperation moves app's requested operation on by one pass
// (argocd-contract §3.1): it starts it (status.operationState Running),
// runs the next group of its sync, and at the end records the result,
// the history entry and clears app.Operation. It returns the wait before
// the next pass.
func (r *ApplicationReconciler) runOperation(ctx context.Context, app *argov1.Application, c *comparison) time.Duration {
	op := app.Operation
	now := metav1.NewTime(r.clock())
	st := app.Status.OperationState
	// An operation in progress goes on whatever app.Operation says now: a
	// second request patched onto the Application does not start over a
	// half-run sync (Argo CD's processRequestedAppOperation reads only
	// status.operationState while one is in progress).
	if st == nil || completed(st.Phase) {
		if op.Sync == nil {
			app.Operation = nil
			return time.Millisecond
		}
		st = &argov1.OperationState{Operation: *op, Phase: argov1.OperationRunning, StartedAt: now}
		app.Status.OperationState = st
		if !op.InitiatedBy.Automated {
			r.event(app, corev1.EventTypeNormal, ReasonOperationStarted, "Initiated sync to "+describeRevision(op.Sync))
		}
		if needsFetch(op) {
			r.askFetch(ctx, app, waveKey(app, st))
		}
		// The start is written before anything is applied: its time names
		// generated hooks, so a restart must find the same one.
		return time.Millisecond
	}
	if st.Phase == argov1.OperationTerminating {
		out := outcome{phase: argov1.OperationFailed, message: "Operation terminated"}
		if !r.terminateHooks(ctx, st) {
			out = outcome{phase: argov1.OperationError, message: "Operation termination had errors"}
		}
		r.finish(app, st, out)
		return time.Millisecond
	}
	if st.FinishedAt != nil { // waiting to retry
		if wait := st.FinishedAt.Add(retryWait(st.Operation.Retry, st.RetryCount-1)).Sub(now.Time); wait > 0 {
			return wait
		}
		st.FinishedAt, st.SyncResult = nil, nil
	}
	if r.fetchPending(ctx, app, waveKey(app, st)) {
		if _, waiting := r.fetches.get(waveKey(app, st)); !waiting {
			return time.Millisecond // fetched: compare again, then sync
		}
		st.Message = "waiting for the source to be fetched"
		return pollWait
	}
	out := r.syncPass(ctx, app, st, c)
	switch out.phase {
	case argov1.OperationRunning:
		st.Message = out.message
		return max(out.wait, time.Millisecond)
	case argov1.OperationSucceeded:
		r.finish(app, st, out)
		return time.Millisecond
	}
	r.releaseHooks(ctx, st)
	if limit := st.Operation.Retry.Limit; limit < 0 || st.RetryCount < limit {
		st.RetryCount++
		st.FinishedAt = &now
		at := now.Add(retryWait(st.Operation.Retry, st.RetryCount-1))
		st.Message = fmt.Sprintf("%s. Retrying attempt #%d at %s.", out.message, st.RetryCount, at.Format(time.Kitchen))
		return retryWait(st.Operation.Retry, st.RetryCount-1)
	}
	r.finish(app, st, out)
	return time.Millisecond
}

func completed(phase string) bool {
	return phase == argov1.OperationSucceeded || phase == argov1.OperationFailed || phase == argov1.OperationError
}

// finish ends the operation: phase and message, the history entry of a
// full successful sync, the event, and app.Operation cleared.
func (r *ApplicationReconciler) finish(app *argov1.Application, st *argov1.OperationState, out outcome) {
	now := metav1.NewTime(r.clock())
	r.waves.forget(waveKey(app, st))
	st.Phase, st.Message, st.FinishedAt = out.phase, out.message, &now
	app.Operation = nil
	sync := st.Operation.Sync
	rev := ""
	if st.SyncResult != nil {
		rev = st.SyncResult.Revision
		if len(st.SyncResult.Revisions) > 0 {
			rev = fmt.Sprint(st.SyncResult.Revisions)
		}
	}
	partial := sync != nil && len(sync.Resources) > 0
	if out.phase != argov1.OperationSucceeded {
		r.event(app, corev1.EventTypeWarning, ReasonOperationCompleted, fmt.Sprintf("Sync operation to %s failed: %s", rev, out.message))
		return
	}
	if partial {
		r.event(app, corev1.EventTypeNormal, ReasonOperationCompleted, fmt.Sprintf("Partial sync operation to %s succeeded", rev))
		return
	}
	r.event(app, corev1.EventTypeNormal, ReasonOperationCompleted, fmt.Sprintf("Sync operation to %s succeeded", rev))
	if sync.DryRun || st.SyncResult == nil {
		return
	}
	r.addHistory(app, st, now)
}

// addHistory appends a full sync to status.history, oldest first, keeping
// spec.revisionHistoryLimit entries (argocd-contract §2).
func (r *ApplicationReconciler) addHistory(app *argov1.Application, st *argov1.OperationState, now metav1.Time) {
	h := argov1.RevisionHistory{
		Revision: st.SyncResult.Revision, Revisions: st.SyncResult.Revisions,
		Source: st.SyncResult.Source, Sources: st.SyncResult.Sources,
		DeployStartedAt: st.StartedAt.DeepCopy(), DeployedAt: now, InitiatedBy: st.Operation.InitiatedBy,
	}
	if n := len(app.Status.History); n > 0 {
		h.ID = app.Status.History[n-1].ID + 1
	}
	hist := append(app.Status.History, h)
	limit := max(int(app.GetRevisionHistoryLimit()), 0) // Argo CD's Trunc clamps a negative limit
	if len(hist) > limit {
		hist = hist[len(hist)-limit:]
	}
	if len(hist) == 0 {
		hist = nil
	}
	app.Status.History = hist
}

// retryWait is the back-off before retry n (0-based): duration × factor^n,
// at most maxDuration; defaults 5s, 2, 3m (argocd-contract §1.9).
func retryWait(s argov1.RetryStrategy, n int64) time.Duration {
	d, factor, maxD := 5*time.Second, int64(2), 3*time.Minute
	if b := s.Backoff; b != nil {
		if v, ok := parseSeconds(b.Duration); ok {
			d = v
		}
		if b.Factor != nil {
			factor = *b.Factor
		}
		if v, ok := parseSeconds(b.MaxDuration); ok {
			maxD = v
		}
	}
	for i := int64(0); i < n && d < maxD; i++ {
		d *= time.Duration(factor)
	}
	return min(d, maxD)
}

// parseSeconds reads a Go duration or a bare number of seconds.
func parseSeconds(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

func describeRevision(s *argov1.SyncOperation) string {
	if s.Revision != "" {
		return s.Revision
	}
	if len(s.Revisions) > 0 {
		return strings.Join(s.Revisions, ",")
	}
	return "the target revision"
}
