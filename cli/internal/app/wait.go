package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/ui"
)

// WaitFor is what `app wait` waits for (argocd app wait's flags): Sync
// (Synced), Health (Healthy), Suspended, Degraded (any of the three health
// flags given satisfies the health check), Operation (no operation pending
// or running, and the controller has compared again since the last one
// ended).
type WaitFor struct {
	Sync, Health, Suspended, Degraded, Operation bool
}

// OrDefault is w, or with no flag set sync, health and operation, as
// argocd app wait.
func (w WaitFor) OrDefault() WaitFor {
	if w == (WaitFor{}) {
		return WaitFor{Sync: true, Health: true, Operation: true}
	}
	return w
}

// Ready reports whether a meets w, and whether an operation is in
// progress: the operation field is set, the operation state has not
// finished, or it finished (not a dry run) and status.reconciledAt is not
// after its end yet, as argocd app wait decides.
func Ready(a *argov1.Application, w WaitFor) (ready, inProgress bool) {
	if a.Operation != nil {
		inProgress = true
	} else if st := a.Status.OperationState; st != nil {
		dryRun := st.Operation.Sync != nil && st.Operation.Sync.DryRun
		inProgress = st.FinishedAt == nil ||
			(!dryRun && (a.Status.ReconciledAt == nil || a.Status.ReconciledAt.Before(st.FinishedAt)))
	}
	health := a.Status.Health.Status
	healthOK := !(w.Health || w.Suspended || w.Degraded) ||
		(w.Health && health == argov1.HealthHealthy) ||
		(w.Suspended && health == argov1.HealthSuspended) ||
		(w.Degraded && health == argov1.HealthDegraded)
	synced := !w.Sync || a.Status.Sync.Status == argov1.SyncStatusSynced
	operational := !w.Operation || a.Operation == nil
	return synced && healthOK && operational, inProgress
}

// Done is true when a meets w and, when w waits for operations, none is in
// progress.
func Done(a *argov1.Application, w WaitFor) bool {
	ready, inProgress := Ready(a, w)
	return ready && (!inProgress || !w.Operation)
}

// StateLine is the one line the wait shows of a: sync and health status,
// and the operation's phase (or "requested" before the controller took it
// up).
func StateLine(a *argov1.Application) string {
	parts := []string{AppState(a)}
	switch st := a.Status.OperationState; {
	case a.Operation != nil && (st == nil || st.FinishedAt != nil):
		parts = append(parts, "operation requested")
	case st != nil:
		parts = append(parts, "operation "+st.Phase)
	}
	return strings.Join(parts, ", ")
}

// AppState is "sync <status>, health <status>" of a ("Unknown" for an
// empty status).
func AppState(a *argov1.Application) string {
	return "sync " + firstNonEmpty(a.Status.Sync.Status, "Unknown") + ", health " + firstNonEmpty(a.Status.Health.Status, "Unknown")
}

// Wait reads the Application with get every interval until it meets w
// (Done) or ctx ends, drawing its state with a spinner on u (a new waiting
// line off a terminal) each time the state line changes. It fails when w
// waits for health and the health turns Degraded from a known, better
// state (as argocd app wait), and when get fails other than by ctx's end;
// on ctx's deadline the error says what was awaited and the last state.
// It returns the last Application read.
func Wait(ctx context.Context, get func(context.Context) (*argov1.Application, error), w WaitFor, u *ui.UI,
	interval time.Duration, what string) (*argov1.Application, error) {
	var last *argov1.Application
	var shown, prevHealth string
	stop := func() {}
	defer func() { stop() }()
	for {
		a, err := get(ctx)
		if err != nil && ctx.Err() == nil {
			return last, err
		}
		if err == nil {
			last = a
			if Done(a, w) {
				return a, nil
			}
			h := a.Status.Health.Status
			if w.Health && h == argov1.HealthDegraded && prevHealth != "" && prevHealth != argov1.HealthUnknown && prevHealth != argov1.HealthDegraded {
				return a, fmt.Errorf("application '%s' health state has transitioned from %s to %s", a.Name, prevHealth, h)
			}
			prevHealth = h
			if line := StateLine(a); line != shown {
				stop()
				shown = line
				stop = u.Spin(fmt.Sprintf("waiting for %s: %s", what, line))
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if last != nil {
					return last, fmt.Errorf("timed out waiting for %s: last state: %s", what, StateLine(last))
				}
				return last, fmt.Errorf("timed out waiting for %s", what)
			}
			return last, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Describe names what w waits for, e.g. "sync, health and operation".
func (w WaitFor) Describe() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{w.Sync, "sync"}, {w.Health, "health"}, {w.Suspended, "suspended"}, {w.Degraded, "degraded"}, {w.Operation, "operation"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// CheckSyncResult checks the operation a sync or rollback requested at
// requested (whole seconds, as the API stores times) once Wait returned:
// an error when status.operationState is missing or older than the
// request (the controller cleared the operation without running it), when
// its phase is not Succeeded (argocd: "Operation has completed with phase:
// …"), or, for a whole-application sync that left the application not
// Synced, when objects were left unpruned ("N resources require pruning").
func CheckSyncResult(a *argov1.Application, requested time.Time, selective bool) error {
	st := a.Status.OperationState
	if st == nil || st.StartedAt.Time.Before(requested.Truncate(time.Second)) {
		return errors.New("the operation ended without a result in status.operationState")
	}
	if st.Phase != argov1.OperationSucceeded {
		msg := fmt.Sprintf("Operation has completed with phase: %s", st.Phase)
		if st.Message != "" {
			msg += ": " + ui.OneLine(st.Message)
		}
		return errors.New(msg)
	}
	if dry := st.Operation.Sync != nil && st.Operation.Sync.DryRun; dry || selective || a.Status.Sync.Status == argov1.SyncStatusSynced {
		return nil
	}
	pruning := 0
	if st.SyncResult != nil {
		for _, r := range st.SyncResult.Resources {
			if r != nil && r.Status == argov1.ResultPruneSkipped {
				pruning++
			}
		}
	}
	if pruning > 0 {
		return fmt.Errorf("%d resources require pruning", pruning)
	}
	return nil
}
