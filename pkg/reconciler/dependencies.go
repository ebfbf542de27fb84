package reconciler

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eddyops/eddy/pkg/cel"
)

// Dependencies evaluates the spec.dependsOn of an object of kind T, whose
// dependencies are objects of the same kind (a Kustomization's
// Kustomizations, a HelmRelease's HelmReleases).
type Dependencies[T Object] struct {
	// Reader reads the dependencies; the controller's API reader, so a
	// dependency's status is the latest.
	Reader client.Reader
	// New returns an empty T to read a dependency into.
	New func() T
	// UpToDate is the kind's further rule for a dependency that is Ready at
	// its generation: "" when it holds, else why not, ending the message
	// "dependency '<ns>/<name>' <why>". nil: none.
	UpToDate func(dep T) string
	// Retry is when a dependency that is not ready is checked again
	// (--requeue-dependency).
	Retry time.Duration
	// AdditiveCEL is the feature gate AdditiveCELDependencyCheck: a
	// dependency with a readyExpr must be Ready too, not only make it true.
	AdditiveCEL bool
}

// terminalMessage begins the message of a configuration error that stalls.
// Flux compatible.
const terminalMessage = "Reconciliation failed terminally due to configuration error"

// Check requires, in the order of refs, each dependency of obj to be Ready
// at its generation and then UpToDate; or, for a dependency with a
// readyExpr, the expression true over `self` (obj) and `dep` (the
// dependency), and with AdditiveCEL the rest too. It returns nil when all
// are, else the first failure, retried after Retry, with reason
// DependencyNotReady and a message "dependency '<ns>/<name>' is not ready"
// (or "... is not ready according to readyExpr eval", "unable to get
// '<ns>/<name>' dependency: <error>", the evaluation's error). A readyExpr
// that does not compile stalls with InvalidCELExpression. A ref without a
// namespace names one in obj's. Flux compatible: order, messages, reasons
// and gate (kustomize-controller's and helm-controller's checkDependencies).
func (d Dependencies[T]) Check(ctx context.Context, obj T, refs []meta.DependencyReference) *Failure {
	for _, ref := range refs {
		if f := d.check(ctx, obj, ref); f != nil {
			if !f.Stalled {
				f.Retry = d.Retry
			}
			return f
		}
	}
	return nil
}

func (d Dependencies[T]) check(ctx context.Context, obj T, ref meta.DependencyReference) *Failure {
	ns := ref.Namespace
	if ns == "" {
		ns = obj.GetNamespace()
	}
	dep := d.New()
	if err := d.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, dep); err != nil {
		return Fail(meta.DependencyNotReadyReason, "unable to get '%s/%s' dependency: %s", ns, ref.Name, err)
	}
	notReady := func(why string) *Failure {
		return Fail(meta.DependencyNotReadyReason, "dependency '%s/%s' %s", ns, ref.Name, why)
	}
	if ref.ReadyExpr != "" {
		ready, compileErr, err := cel.DependencyReady(ctx, ref.ReadyExpr, obj, dep)
		switch {
		case compileErr != nil:
			return Fail(meta.InvalidCELExpressionReason, "%s: failed to evaluate dependency %s: %s", terminalMessage, dep.GetName(), compileErr).Stall()
		case err != nil:
			return Fail(meta.DependencyNotReadyReason, "%s", err)
		case !ready:
			return notReady("is not ready according to readyExpr eval")
		case !d.AdditiveCEL:
			return nil
		}
	}
	if dep.GetGeneration() != dep.GetObservedGeneration() || !apimeta.IsStatusConditionTrue(dep.GetConditions(), meta.ReadyCondition) {
		return notReady("is not ready")
	}
	if d.UpToDate != nil {
		if why := d.UpToDate(dep); why != "" {
			return notReady(why)
		}
	}
	return nil
}
