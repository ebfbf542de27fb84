package controller

import (
	"context"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/cel"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// terminalErrorMessage begins the message of a configuration error that
// stalls. Flux compatible.
const terminalErrorMessage = "Reconciliation failed terminally due to configuration error"

// healthCheckExprs compiles spec.healthCheckExprs (nil when there are
// none). One that does not compile stalls the HelmRelease before anything
// else is done, with Ready=False InvalidCELExpression and Flux's message,
// e.g. "Reconciliation failed terminally due to configuration error:
// failed to create custom status evaluator for healthchecks[0]: failed to
// parse the expression Current: ...".
func healthCheckExprs(obj *helmv2.HelmRelease) (*cel.HealthChecks, *failure) {
	if len(obj.Spec.HealthCheckExprs) == 0 {
		return nil, nil
	}
	exprs, err := cel.NewHealthChecks(obj.Spec.HealthCheckExprs)
	if err != nil {
		return nil, fail(meta.InvalidCELExpressionReason, "%s: %s", terminalErrorMessage, err).Stall()
	}
	return exprs, nil
}

// objectStatus is the status of u in a release wait: by the expression of
// exprs for its kind (or its API group) when there is one, else by
// pkg/health's kstatus rules. An expression decides even for a Job, as in
// Flux's helm-controller, where the spec's status readers come before the
// built-in ones. celErr is the evaluation error of an expression (the
// object then counts as Unknown and the wait goes on).
func objectStatus(ctx context.Context, exprs *cel.HealthChecks, u *unstructured.Unstructured) (res *status.Result, celErr, err error) {
	if h := exprs.For(u.GroupVersionKind().GroupKind()); h != nil {
		res, celErr = h.Status(ctx, u)
		return res, celErr, nil
	}
	res, err = health.Compute(u)
	return res, nil, err
}
