package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/cel"
	celgo "github.com/google/cel-go/cel"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CompileFilter compiles a Receiver's resourceFilter or resources[].filter:
// a bool expression over `res` (the resource's metadata) and `req` (the
// webhook's JSON body). Flux compatible messages.
func CompileFilter(expr string) (*cel.Expression, error) {
	return cel.Compile(expr, celgo.BoolType, "res", "req")
}

// ValidateFilters compiles every CEL filter of rcv and returns the first
// error as Flux words it.
func ValidateFilters(rcv *notificationv1.Receiver) error {
	if expr := rcv.Spec.ResourceFilter; expr != "" {
		if _, err := CompileFilter(expr); err != nil {
			return fmt.Errorf("invalid resourceFilter expression: %w", err)
		}
	}
	for i, res := range rcv.Spec.Resources {
		if res.Filter == "" {
			continue
		}
		if _, err := CompileFilter(res.Filter); err != nil {
			return fmt.Errorf("invalid filter expression for resources[%d] (kind=%q, name=%q): %w", i, res.Kind, res.Name, err)
		}
	}
	return nil
}

// resourceFilter reports whether a resource gets its reconcile request.
type resourceFilter func(ctx context.Context, obj client.Object) (bool, error)

// newFilters returns one filter per resources[] entry of rcv, nil where
// no expression applies: resourceFilter and the entry's filter must both
// accept the resource. Flux compatible: `req` is the payload decoded as a
// JSON object when the request's Content-Type is application/json, else
// an empty object; a JSON body that does not decode is an error.
func newFilters(rcv *notificationv1.Receiver, h http.Header, payload []byte) ([]resourceFilter, error) {
	filters := make([]resourceFilter, len(rcv.Spec.Resources))
	filtered := rcv.Spec.ResourceFilter != ""
	for _, res := range rcv.Spec.Resources {
		filtered = filtered || res.Filter != ""
	}
	if !filtered {
		return filters, nil
	}
	req := map[string]any{}
	if isJSON(h) {
		if err := json.NewDecoder(bytes.NewReader(payload)).Decode(&req); err != nil {
			return nil, fmt.Errorf("failed to parse request body as JSON: %s", err)
		}
	}
	compile := func(expr string) (*cel.Expression, error) {
		if expr == "" {
			return nil, nil
		}
		return CompileFilter(expr)
	}
	top, err := compile(rcv.Spec.ResourceFilter)
	if err != nil {
		return nil, err
	}
	for i, res := range rcv.Spec.Resources {
		own, err := compile(res.Filter)
		if err != nil {
			return nil, err
		}
		if top == nil && own == nil {
			continue
		}
		filters[i] = func(ctx context.Context, obj client.Object) (bool, error) {
			b, err := json.Marshal(obj)
			if err != nil {
				return false, err
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				return false, err
			}
			vars := map[string]any{"res": m, "req": req}
			for _, e := range []*cel.Expression{top, own} {
				if e == nil {
					continue
				}
				if ok, err := e.Bool(ctx, vars); err != nil || !ok {
					return false, err
				}
			}
			return true, nil
		}
	}
	return filters, nil
}

// isJSON reports whether one of the Content-Type's media types is
// application/json. Flux compatible.
func isJSON(h http.Header) bool {
	for _, v := range strings.Split(h.Get("Content-Type"), ",") {
		t, _, err := mime.ParseMediaType(v)
		if err != nil {
			return false
		}
		if t == "application/json" {
			return true
		}
	}
	return false
}
