package cel

import (
	"context"
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// HealthCheck is the compiled current / inProgress / failed expressions of
// one spec.healthCheckExprs entry.
type HealthCheck struct {
	current, inProgress, failed *Expression
}

// NewHealthCheck parses the expressions of hc; current is required,
// inProgress and failed are optional. Flux compatible messages:
// `expression Current not specified`, `failed to parse the expression
// <Current|InProgress|Failed>: failed to parse the CEL expression '<expr>': …`.
//
// The expressions are parsed, not type-checked, as Flux does: custom
// resources need not have the usual top-level fields, so which variables
// exist (status, spec, data, …) is known only from the object.
func NewHealthCheck(hc kustomizev1.CustomHealthCheck) (*HealthCheck, error) {
	if hc.Current == "" {
		return nil, fmt.Errorf("expression Current not specified")
	}
	h := &HealthCheck{}
	for _, e := range []struct {
		name, src string
		dst       **Expression
	}{
		{"Current", hc.Current, &h.current},
		{"InProgress", hc.InProgress, &h.inProgress},
		{"Failed", hc.Failed, &h.failed},
	} {
		if e.src == "" {
			continue
		}
		expr, err := Parse(e.src)
		if err != nil {
			return nil, fmt.Errorf("failed to parse the expression %s: %w", e.name, err)
		}
		*e.dst = expr
	}
	return h, nil
}

// Status is the kstatus status of u by the expressions, Flux compatible
// (RFC 0009 of Flux):
//   - an integer status.observedGeneration that differs from
//     metadata.generation ⇒ InProgress, whatever the expressions say (the
//     object's controller has not seen its last change);
//   - otherwise the expressions in the order inProgress, failed, current:
//     the first that is true decides (InProgress, Failed, Current);
//   - none true ⇒ InProgress.
//
// The object's top-level fields are the expressions' variables (`status`,
// `metadata`, `spec`, …). An evaluation error (a field the object does not
// have yet, e.g. `no such key: status`, or a result that is not a bool) is
// returned: the health check then reports the object's status as Unknown
// with that error and goes on waiting. The Result has no message, as in Flux.
func (h *HealthCheck) Status(ctx context.Context, u *unstructured.Unstructured) (*status.Result, error) {
	obj := u.UnstructuredContent()
	if observed, ok, err := unstructured.NestedInt64(obj, "status", "observedGeneration"); err == nil && ok {
		if gen, ok, err := unstructured.NestedInt64(obj, "metadata", "generation"); err == nil && ok && gen != observed {
			return &status.Result{Status: status.InProgressStatus}, nil
		}
	}
	for _, e := range []struct {
		expr *Expression
		st   status.Status
	}{
		{h.inProgress, status.InProgressStatus},
		{h.failed, status.FailedStatus},
		{h.current, status.CurrentStatus},
	} {
		if e.expr == nil {
			continue
		}
		ok, err := e.expr.Bool(ctx, obj)
		if err != nil {
			return nil, err
		}
		if ok {
			return &status.Result{Status: e.st}, nil
		}
	}
	return &status.Result{Status: status.InProgressStatus}, nil
}

// HealthChecks are a Kustomization's spec.healthCheckExprs by the kind
// (or, for an entry without kind, the whole API group) they decide.
type HealthChecks struct {
	byKind map[schema.GroupKind]*HealthCheck
}

// NewHealthChecks compiles every entry of exprs; the first bad one fails
// the lot, naming its index. An entry without kind covers every kind of its
// API group; two entries for the same kind (or the same group) are refused.
// Flux compatible messages: `duplicate custom health check for GroupKind
// <Kind.group> at healthchecks[<i>]`, `failed to create custom status
// evaluator for healthchecks[<i>]: <NewHealthCheck's error>`. The version
// in apiVersion is not matched: a kind is checked at whatever version the
// API server serves it.
func NewHealthChecks(exprs []kustomizev1.CustomHealthCheck) (*HealthChecks, error) {
	hs := &HealthChecks{byKind: make(map[schema.GroupKind]*HealthCheck, len(exprs))}
	for i, e := range exprs {
		gk := schema.FromAPIVersionAndKind(e.APIVersion, e.Kind).GroupKind()
		if _, dup := hs.byKind[gk]; dup {
			return nil, fmt.Errorf("duplicate custom health check for GroupKind %s at healthchecks[%d]", gk, i)
		}
		h, err := NewHealthCheck(e)
		if err != nil {
			return nil, fmt.Errorf("failed to create custom status evaluator for healthchecks[%d]: %w", i, err)
		}
		hs.byKind[gk] = h
	}
	return hs, nil
}

// For returns the health check deciding kind gk: the entry for the kind,
// else the one for its whole group; nil when there is none (kstatus
// decides), also on a nil *HealthChecks.
func (hs *HealthChecks) For(gk schema.GroupKind) *HealthCheck {
	if hs == nil {
		return nil
	}
	if h := hs.byKind[gk]; h != nil {
		return h
	}
	return hs.byKind[schema.GroupKind{Group: gk.Group}]
}

// Len is the number of entries.
func (hs *HealthChecks) Len() int {
	if hs == nil {
		return 0
	}
	return len(hs.byKind)
}
