package server

import (
	"context"
	"fmt"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/eddyops/eddy/pkg/cel"
	"github.com/eddyops/eddy/pkg/events"
	celgo "github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/runtime"
)

// commitStatus evaluates the Provider's spec.commitStatusExpr: the commit
// status id (GitHub's context, GitLab's name, ...) of a git type, from
// `event` (as presented to the Provider: metadata keys without their
// prefixes, the Alert's eventMetadata merged), `alert` and `provider`. It
// returns "" when the type is not a git one or has no expression, so the
// default id applies. Flux compatible, errors included: the expression
// must compile to a string and evaluate without error, or nothing is
// delivered.
func commitStatus(ctx context.Context, ev *events.Event, a *notificationv1.Alert, p *notificationv1.Provider) (string, error) {
	if !notifier.IsGit(p.Spec.Type) || p.Spec.CommitStatusExpr == "" {
		return "", nil
	}
	expr, err := cel.Compile(p.Spec.CommitStatusExpr, celgo.StringType, "event", "alert", "provider")
	if err != nil {
		return "", fmt.Errorf("failed to compile expression: %w", err)
	}
	vars := map[string]any{}
	for name, obj := range map[string]any{"event": ev, "alert": a, "provider": p} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return "", fmt.Errorf("failed to convert %s to map: %w", name, err)
		}
		vars[name] = m
	}
	return expr.Str(ctx, vars)
}
