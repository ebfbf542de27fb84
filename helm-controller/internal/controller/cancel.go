package controller

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// healthCheckCanceled is the cause of a wait cut short by a newer desired
// state: the message of Flux's HealthCheckCanceled reason.
type healthCheckCanceled struct{ by string }

func (e *healthCheckCanceled) Error() string {
	return "New reconciliation triggered by " + e.by
}

// waits holds the cancel function of each HelmRelease's running wait for
// its release's objects, so that a new generation or chart revision ends
// the wait instead of holding a worker until the action's timeout (Flux's
// CancelHealthCheckOnNewRevision, on in Eddy as in kustomize-controller).
type waits struct {
	mu      sync.Mutex
	running map[types.UID]context.CancelCauseFunc
}

// start returns the context the release actions of uid wait under and a
// function that releases it.
func (w *waits) start(ctx context.Context, uid types.UID) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	if w.running == nil {
		w.running = map[types.UID]context.CancelCauseFunc{}
	}
	w.running[uid] = cancel
	w.mu.Unlock()
	return wctx, func() {
		w.mu.Lock()
		delete(w.running, uid)
		w.mu.Unlock()
		cancel(nil)
	}
}

// cancel ends the running wait of uid, if any, naming what triggered it as
// `<Kind>/<namespace>/<name>`.
func (w *waits) cancel(uid types.UID, kind, namespace, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cancel, ok := w.running[uid]; ok {
		cancel(&healthCheckCanceled{by: fmt.Sprintf("%s/%s/%s", kind, namespace, name)})
	}
}
