package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	helmaction "helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	ctrl "sigs.k8s.io/controller-runtime"
)

// logBuffer keeps the last lines Helm logged during an action, for the
// failure event ("Last Helm logs").
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) log(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, fmt.Sprintf(format, args...))
	if len(b.lines) > 10 {
		b.lines = b.lines[len(b.lines)-10:]
	}
}

func (b *logBuffer) withLogs(msg string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) == 0 {
		return msg
	}
	return msg + "\n\nLast Helm logs:\n\n" + strings.Join(b.lines, "\n")
}

// helmConfig is the Helm configuration of req's release; observe (nil for
// none) is told of each release written. Helm's log lines go to logs (nil
// for the reconcile's debug log).
func (r *HelmReleaseReconciler) helmConfig(ctx context.Context, req *releaseRequest, observe func(*helmrelease.Release), logs ...*logBuffer) (*helmaction.Configuration, error) {
	debug := helmLog(ctx)
	logf := debug
	if len(logs) > 0 {
		b := logs[0]
		logf = func(format string, args ...any) {
			debug(format, args...)
			b.log(format, args...)
		}
	}
	poll := r.HealthPoll
	if ws := req.obj.Spec.WaitStrategy; ws != nil && ws.Name == "legacy" {
		poll = -1
	}
	waitCtx := req.waitCtx
	if waitCtx == nil {
		waitCtx = ctx
	}
	return newHelmConfig(waitCtx, req.getter, release.StorageNamespace(req.obj), action.MaxHistory(req.obj), poll, req.exprs, logf, observe)
}

// helmLog sends Helm's debug lines to the reconcile's logger at debug level.
func helmLog(ctx context.Context) func(string, ...any) {
	log := ctrl.LoggerFrom(ctx).V(1)
	return func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
}
