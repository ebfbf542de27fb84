package plan

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// Values of the Prune and Delete sync options (argocd-contract §1.9).
const (
	ValueFalse   = "false"
	ValueConfirm = "confirm"
)

// Delete propagation policies of PrunePropagationPolicy (§1.9).
const (
	PropagationForeground = "foreground"
	PropagationBackground = "background"
	PropagationOrphan     = "orphan"
)

// Options are the sync options in force for one object
// (argocd-contract §1.9): the operation's syncOptions ("Key=value"
// strings), then, for the keys Argo CD also reads per resource (PruneLast,
// Prune, Delete, ServerSideApply, Replace, Force, Validate,
// SkipDryRunOnMissingResource, ClientSideApplyMigration), the object's
// argocd.argoproj.io/sync-options annotation (comma list, trimmed), which
// wins. Keys Argo CD reads only from the operation (CreateNamespace,
// ApplyOutOfSyncOnly, RespectIgnoreDifferences, FailOnSharedResource,
// PrunePropagationPolicy) are ignored in the annotation. Boolean values
// are "true" or "false" exactly, as Argo CD compares whole strings; any
// other value leaves the option as it was.
type Options struct {
	CreateNamespace             bool
	PruneLast                   bool
	ServerSideApply             bool
	Replace                     bool
	Force                       bool
	ApplyOutOfSyncOnly          bool
	RespectIgnoreDifferences    bool
	SkipDryRunOnMissingResource bool
	FailOnSharedResource        bool
	// Validate is false only with Validate=false (kubectl --validate=false).
	Validate bool
	// ClientSideApplyMigration moves kubectl-client-side-apply's fields to
	// the server-side apply manager; on unless set to false.
	ClientSideApplyMigration bool
	// Prune is "", "false" (never prune) or "confirm" (prune after approval).
	Prune string
	// Delete is "", "false" or "confirm", as Prune but for the
	// Application's deletion (§1.12).
	Delete string
	// PrunePropagationPolicy is "foreground" (default), "background" or
	// "orphan".
	PrunePropagationPolicy string
}

// ParseOptions returns the options in force for u under the operation's
// sync options op (see Options for the precedence). u may be nil for the
// Application-wide options.
func ParseOptions(op []string, u *unstructured.Unstructured) Options {
	o := Options{Validate: true, ClientSideApplyMigration: true, PrunePropagationPolicy: PropagationForeground}
	for _, item := range op {
		o.set(strings.TrimSpace(item), true)
	}
	for _, item := range csv(u, argov1.AnnotationSyncOptions) {
		o.set(item, false)
	}
	return o
}

// set applies one "Key=value" option; fromOp is false for an option read
// from an object's annotation, where app-only keys do nothing.
func (o *Options) set(item string, fromOp bool) {
	key, value, _ := strings.Cut(item, "=")
	if fromOp {
		switch key {
		case "CreateNamespace":
			setBool(&o.CreateNamespace, value)
		case "ApplyOutOfSyncOnly":
			setBool(&o.ApplyOutOfSyncOnly, value)
		case "RespectIgnoreDifferences":
			setBool(&o.RespectIgnoreDifferences, value)
		case "FailOnSharedResource":
			setBool(&o.FailOnSharedResource, value)
		case "PrunePropagationPolicy":
			switch value {
			case PropagationForeground, PropagationBackground, PropagationOrphan:
				o.PrunePropagationPolicy = value
			}
		}
	}
	switch key {
	case "PruneLast":
		setBool(&o.PruneLast, value)
	case "ServerSideApply":
		setBool(&o.ServerSideApply, value)
	case "Replace":
		setBool(&o.Replace, value)
	case "Force":
		setBool(&o.Force, value)
	case "Validate":
		setBool(&o.Validate, value)
	case "SkipDryRunOnMissingResource":
		setBool(&o.SkipDryRunOnMissingResource, value)
	case "ClientSideApplyMigration":
		setBool(&o.ClientSideApplyMigration, value)
	case "Prune":
		setConfirm(&o.Prune, value)
	case "Delete":
		setConfirm(&o.Delete, value)
	}
}

func setBool(dst *bool, value string) {
	switch value {
	case "true":
		*dst = true
	case "false":
		*dst = false
	}
}

// setConfirm sets a Prune/Delete value; "true" restores the default "".
func setConfirm(dst *string, value string) {
	switch value {
	case ValueFalse, ValueConfirm:
		*dst = value
	case "true":
		*dst = ""
	}
}

// PruneDisabled is true when Prune=false is in force for the live object
// u: it is never pruned and its result is PruneSkipped
// (argocd-contract §1.9, §5).
func PruneDisabled(u *unstructured.Unstructured, opts []string) bool {
	return ParseOptions(opts, u).Prune == ValueFalse
}

// PruneNeedsConfirm is true when Prune=confirm is in force for u: it is
// pruned only once the Application carries
// argocd.argoproj.io/deletion-approved (argocd-contract §1.9).
func PruneNeedsConfirm(u *unstructured.Unstructured, opts []string) bool {
	return ParseOptions(opts, u).Prune == ValueConfirm
}
