package cel

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A health check expression that would run for ages (nested
// comprehensions over a big list, 10^12 steps) stops when the health
// check's context ends, with an error, as in Flux (no cost limit there
// either: InterruptCheckFrequency(100) and the context).
func TestHealthCheckRunawayExpressionStopsWithContext(t *testing.T) {
	big := "[" + strings.Repeat("0,", 9999) + "0]"
	h, err := NewHealthCheck(kustomizev1.CustomHealthCheck{APIVersion: "example.com/v1", Kind: "Thing",
		Current: big + ".all(a, " + big + ".all(b, " + big + ".all(c, a == b)))"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "status": map[string]any{}}}
	_, err = h.Status(ctx, u)
	if err == nil || !strings.Contains(err.Error(), "operation interrupted") && !strings.Contains(err.Error(), "cancel") && !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v", err)
	}
}

// A field the object does not have yet is an evaluation error (the check
// reports Unknown and waits), as Flux: cel-go's `no such attribute(s)`; a huge status list is
// fine; a panic-prone expression (division by zero, index out of range)
// is an error, not a panic.
func TestHealthCheckMissingFieldAndHostileValues(t *testing.T) {
	mk := func(current string) *HealthCheck {
		h, err := NewHealthCheck(kustomizev1.CustomHealthCheck{APIVersion: "example.com/v1", Kind: "Thing", Current: current})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "x"}}}
	if _, err := mk("status.ready == true").Status(context.Background(), u); err == nil || !strings.Contains(err.Error(), "no such attribute(s): status.ready") {
		t.Errorf("missing status: err = %v", err)
	}
	for _, expr := range []string{"1 / 0 == 1", "metadata.name[5] == 'x'", "[1][3] == 1"} {
		if _, err := mk(expr).Status(context.Background(), u); err == nil {
			t.Errorf("%s: no error", expr)
		}
	}
	items := make([]any, 200000)
	for i := range items {
		items[i] = map[string]any{"ready": true}
	}
	big := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "status": map[string]any{"items": items}}}
	r, err := mk("status.items.all(i, i.ready)").Status(context.Background(), big)
	if err != nil || r.Status != "Current" {
		t.Errorf("huge list: %v %v", r, err)
	}
}
