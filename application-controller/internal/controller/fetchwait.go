package controller

import (
	"context"
	"sync"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// fetchWaitMax bounds how long a sync waits for its sources' fetch; past
// it, the sync goes on with the artifacts there are.
const fetchWaitMax = time.Minute

// fetchWait remembers, per operation (waveKey), when a requested sync
// without a revision asked its sources to fetch: the sync waits until
// each has handled that request, so it applies what the target revision
// names now, as Argo CD resolves targetRevision when the sync runs
// (argocd-contract §3.1), not the last fetched artifact. In memory only:
// after a restart the sync goes on with the artifacts there are.
type fetchWait struct {
	mu    sync.Mutex
	asked map[string]time.Time
}

// needsFetch reports whether op is a requested sync that names no revision.
func needsFetch(op *argov1.Operation) bool {
	return op.Sync != nil && !op.InitiatedBy.Automated && op.Sync.Revision == "" && len(op.Sync.Revisions) == 0
}

func (w *fetchWait) ask(key string, at time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.asked == nil {
		w.asked = map[string]time.Time{}
	}
	w.asked[key] = at
}

func (w *fetchWait) get(key string) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.asked[key]
	return at, ok
}

func (w *fetchWait) forget(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.asked, key)
}

// askFetch requests a fetch of every source of app and records when (the
// wall clock: source-controller's tokens are compared with it).
func (r *ApplicationReconciler) askFetch(ctx context.Context, app *argov1.Application, key string) {
	at := time.Now()
	for _, src := range app.GetSources() {
		if err := r.Sources.Refresh(ctx, app, src, ""); err != nil {
			r.Log.V(1).Info("cannot request a fetch", "error", err.Error())
			return
		}
	}
	r.fetches.ask(key, at)
}

// fetchPending reports whether the operation key still waits for a source
// of app to handle the fetch askFetch requested: its
// lastHandledReconcileAt is older than the request (a cached object that
// does not show the request yet counts as waiting). A source object that
// does not exist yet is the comparison's pending state, not this one's.
// The pass that finds the fetch done still answers true, once: the
// comparison it was handed may predate the new artifact.
func (r *ApplicationReconciler) fetchPending(ctx context.Context, app *argov1.Application, key string) bool {
	at, ok := r.fetches.get(key)
	if !ok {
		return false
	}
	if time.Since(at) < fetchWaitMax {
		for _, src := range app.GetSources() {
			obj := r.sourceObject(ctx, app, src, "")
			if obj == nil {
				continue
			}
			handled, err := time.Parse(time.RFC3339Nano, obj.GetLastHandledReconcileRequest())
			if err != nil || handled.Before(at) {
				return true
			}
		}
	}
	r.fetches.forget(key)
	return true
}
