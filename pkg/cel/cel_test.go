package cel

import (
	"context"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	celgo "github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// homeOps is the healthCheckExprs entry of home-ops' cert-manager
// Kustomization (kubernetes/apps/cert-manager/cert-manager/ks.yaml), verbatim.
var homeOps = kustomizev1.CustomHealthCheck{
	APIVersion: "cert-manager.io/v1",
	Kind:       "ClusterIssuer",
	Failed:     "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')",
	Current:    "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
}

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	// As the API server's objects are decoded: integers are int64.
	j, err := yaml.YAMLToJSON([]byte(y))
	if err == nil {
		err = u.UnmarshalJSON(j)
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

const issuer = "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: letsencrypt-production, generation: 1}\nspec: {acme: {}}\n"

func TestHealthCheckStatus(t *testing.T) {
	h, err := NewHealthCheck(homeOps)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, status string
		want         status.Status
		err          string
	}{
		{"ready", "status: {conditions: [{type: Ready, status: 'True'}]}", status.CurrentStatus, ""},
		{"not ready", "status: {conditions: [{type: Ready, status: 'False', reason: ErrRegisterACMEAccount}]}", status.FailedStatus, ""},
		{"unknown", "status: {conditions: [{type: Ready, status: 'Unknown'}]}", status.InProgressStatus, ""},
		{"other conditions only", "status: {conditions: [{type: Other, status: 'False'}]}",
			// Both filters are empty, so both all() are true: failed comes first.
			status.FailedStatus, ""},
		{"no status yet", "", "", "failed to evaluate the CEL expression '" + homeOps.Failed + "': no such attribute(s): status.conditions"},
		{"stale observedGeneration", "status: {observedGeneration: 0, conditions: [{type: Ready, status: 'True'}]}", status.InProgressStatus, ""},
		{"current observedGeneration", "status: {observedGeneration: 1, conditions: [{type: Ready, status: 'True'}]}", status.CurrentStatus, ""},
		{"string observedGeneration ignored", "status: {observedGeneration: '0', conditions: [{type: Ready, status: 'True'}]}", status.CurrentStatus, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.Status(context.Background(), object(t, issuer+tc.status))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want || res.Message != "" {
				t.Errorf("status %s %q, want %s and no message", res.Status, res.Message, tc.want)
			}
		})
	}
}

// TestHealthCheckOrder: inProgress, then failed, then current; none true
// is InProgress.
func TestHealthCheckOrder(t *testing.T) {
	u := object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x}\n")
	for _, tc := range []struct {
		current, inProgress, failed string
		want                        status.Status
	}{
		{"true", "true", "true", status.InProgressStatus},
		{"true", "false", "true", status.FailedStatus},
		{"true", "", "true", status.FailedStatus},
		{"true", "false", "false", status.CurrentStatus},
		{"data.a == 'x'", "", "", status.CurrentStatus},
		{"false", "false", "false", status.InProgressStatus},
		{"false", "", "", status.InProgressStatus},
	} {
		h, err := NewHealthCheck(kustomizev1.CustomHealthCheck{APIVersion: "v1", Kind: "ConfigMap", Current: tc.current, InProgress: tc.inProgress, Failed: tc.failed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Status(context.Background(), u)
		if err != nil || res.Status != tc.want {
			t.Errorf("current %q inProgress %q failed %q: %v %v, want %s", tc.current, tc.inProgress, tc.failed, res, err, tc.want)
		}
	}
}

func TestHealthCheckErrors(t *testing.T) {
	u := object(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x}\n")
	h, err := NewHealthCheck(kustomizev1.CustomHealthCheck{Current: "data.a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Status(context.Background(), u); err == nil || err.Error() != "failed to evaluate CEL expression as boolean: 'data.a'" {
		t.Errorf("a string result: %v", err)
	}
	h, _ = NewHealthCheck(kustomizev1.CustomHealthCheck{Current: "true", InProgress: "has(data.foo.bar)"})
	if _, err := h.Status(context.Background(), u); err == nil ||
		err.Error() != "failed to evaluate the CEL expression 'has(data.foo.bar)': no such key: foo" {
		t.Errorf("a missing field: %v", err)
	}
}

func TestNewHealthChecks(t *testing.T) {
	hs, err := NewHealthChecks([]kustomizev1.CustomHealthCheck{homeOps, {APIVersion: "example.org/v1", Current: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	for gk, want := range map[schema.GroupKind]bool{
		{Group: "cert-manager.io", Kind: "ClusterIssuer"}: true,
		{Group: "cert-manager.io", Kind: "Issuer"}:        false,
		{Group: "example.org", Kind: "Anything"}:          true,
		{Group: "", Kind: "ConfigMap"}:                    false,
	} {
		if got := hs.For(gk) != nil; got != want {
			t.Errorf("For(%s) = %v, want %v", gk, got, want)
		}
	}
	var none *HealthChecks
	if none.For(schema.GroupKind{Kind: "ConfigMap"}) != nil || none.Len() != 0 {
		t.Error("a nil HealthChecks decides something")
	}

	for _, tc := range []struct {
		name  string
		exprs []kustomizev1.CustomHealthCheck
		want  string
	}{
		{"syntax", []kustomizev1.CustomHealthCheck{homeOps, {APIVersion: "v1", Kind: "ConfigMap", InProgress: "foo.", Current: "true"}},
			"failed to create custom status evaluator for healthchecks[1]: failed to parse the expression InProgress: " +
				"failed to parse the CEL expression 'foo.': ERROR: <input>:1:5: Syntax error: no viable alternative at input '.'"},
		{"no current", []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Failed: "true"}},
			"failed to create custom status evaluator for healthchecks[0]: expression Current not specified"},
		{"duplicate", []kustomizev1.CustomHealthCheck{homeOps, {APIVersion: "cert-manager.io/v1beta1", Kind: "ClusterIssuer", Current: "true"}},
			"duplicate custom health check for GroupKind ClusterIssuer.cert-manager.io at healthchecks[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHealthChecks(tc.exprs)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want prefix %q", err, tc.want)
			}
		})
	}
}

func TestReadyExpr(t *testing.T) {
	self := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"app/version": "v1"}}}
	dep := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"app/version": "v1"}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}
	e, err := NewReadyExpr("self.metadata.annotations['app/version'] == dep.metadata.annotations['app/version']")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.Bool(context.Background(), map[string]any{SelfVar: self, DepVar: dep}); !ok || err != nil {
		t.Errorf("same version: %v %v", ok, err)
	}
	dep["metadata"] = map[string]any{"annotations": map[string]any{"app/version": "v2"}}
	if ok, err := e.Bool(context.Background(), map[string]any{SelfVar: self, DepVar: dep}); ok || err != nil {
		t.Errorf("other version: %v %v", ok, err)
	}
	e, _ = NewReadyExpr("dep.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')")
	if ok, err := e.Bool(context.Background(), map[string]any{SelfVar: self, DepVar: dep}); ok || err != nil {
		t.Errorf("not Ready: %v %v", ok, err)
	}

	for expr, want := range map[string]string{
		"self.generation == deps.generation": "failed to parse the CEL expression 'self.generation == deps.generation': ERROR: <input>:1:20: undeclared reference to 'deps'",
		"dep.metadata.generation":            "CEL expression output type mismatch: expected bool, got dyn",
		"1 + 1":                              "CEL expression output type mismatch: expected bool, got int",
	} {
		if _, err := NewReadyExpr(expr); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want prefix %q", expr, err, want)
		}
	}
}

// TestCompileString: a string expression over declared object variables
// (a commit status id), with Flux's messages for a non-string result and a
// missing key.
func TestCompileString(t *testing.T) {
	e, err := Compile("event.involvedObject.kind + '/' + event.involvedObject.name + '/' + provider.metadata.uid.split('-')[0]",
		celgo.StringType, "event", "alert", "provider")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"event": map[string]any{"involvedObject": map[string]any{"kind": "Kustomization", "name": "apps"}},
		"alert": map[string]any{}, "provider": map[string]any{"metadata": map[string]any{"uid": "4e8a-b"}}}
	if got, err := e.Str(context.Background(), vars); got != "Kustomization/apps/4e8a" || err != nil {
		t.Errorf("got %q %v", got, err)
	}
	if _, err := Compile("event.message", celgo.StringType, "event", "alert", "provider"); err == nil ||
		err.Error() != "CEL expression output type mismatch: expected string, got dyn" {
		t.Errorf("dyn result: %v", err)
	}
	e, _ = Compile("string(event.metadata.revision)", celgo.StringType, "event", "alert", "provider")
	if _, err := e.Str(context.Background(), vars); err == nil ||
		err.Error() != "failed to evaluate the CEL expression 'string(event.metadata.revision)': no such key: metadata" {
		t.Errorf("missing key: %v", err)
	}
}
