package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// FirstReconcileWait bounds how long sync and wait wait for an
// Application that was never reconciled to get its first status before
// they give up with NotReconciledError.
const FirstReconcileWait = 15 * time.Second

// NeverReconciled reports whether application-controller has never
// written a's status: no status.reconciledAt and no condition. Every
// comparison sets reconciledAt, a failed one a condition
// (argocd-contract §2), so either means a controller took the
// Application up.
func NeverReconciled(a *argov1.Application) bool {
	return a.Status.ReconciledAt == nil && len(a.Status.Conditions) == 0
}

// NotReconciledMessage is the one line that explains an Application
// NeverReconciled reports, naming the likely causes: its namespace is not
// one application-controller watches (its own, argocd by default, and
// those of --application-namespaces, as Argo CD's controller), or
// application-controller is not running. Stable: it names only the
// Application and its namespace.
func NotReconciledMessage(a *argov1.Application) string {
	return fmt.Sprintf("Application %s/%s has never been reconciled: either application-controller does not watch namespace %s "+
		"(it watches its own namespace, %s by default, and those of its --application-namespaces flag), "+
		"or application-controller is not running", a.Namespace, a.Name, a.Namespace, DefaultNamespace)
}

// NotReconciledError is NotReconciledMessage as an error, for sync and
// wait once FirstReconcileWait has passed without a first status.
func NotReconciledError(a *argov1.Application) error {
	return errors.New(NotReconciledMessage(a))
}

// ComparisonFailure is the message of the condition that made a's last
// comparison fail (ComparisonError or InvalidSpecError, the conditions that
// leave sync status Unknown; argocd-contract §2), as "<type>: <message>"
// with the message's lines joined by spaces; "" when the comparison did
// not fail.
func ComparisonFailure(a *argov1.Application) string {
	for _, t := range []string{argov1.ConditionInvalidSpecError, argov1.ConditionComparisonError} {
		for _, c := range a.Status.Conditions {
			if c.Type == t {
				return t + ": " + strings.Join(strings.Fields(c.Message), " ")
			}
		}
	}
	return ""
}

// Refreshed reports whether a shows a comparison made after its refresh
// annotation was set at resourceVersion requested: a later resourceVersion
// without the annotation, which application-controller removes when it
// writes a comparison (argocd-contract §3.2).
func Refreshed(a *argov1.Application, requested string) bool {
	_, pending := a.Annotations[argov1.AnnotationRefresh]
	return !pending && a.ResourceVersion != requested
}
