package v1

// Actions of the events notification-controller reports (the `action` of
// the event.toolkit.fluxcd.io/v1 payload). Flux compatible: the values of
// notification-controller api/v1 (v1.10) action.go, untyped strings there too.
const (
	// ActionReconciling: a reconcile is in progress.
	ActionReconciling = "Reconciling"
	// ActionReconciled: a reconcile succeeded.
	ActionReconciled = "Reconciled"
	// ActionFetching: fetching an object or artifact.
	ActionFetching = "Fetching"
	// ActionValidating: validating the spec or the configuration.
	ActionValidating = "Validating"
	// ActionFailed: an operation failed.
	ActionFailed = "Failed"
)
