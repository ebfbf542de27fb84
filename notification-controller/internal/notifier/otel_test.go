package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
)

// TestOTELSpan: an event is one OTLP/HTTP span whose trace ID ties the
// Alert to the revision; the secret's headers are sent and a token is a
// bearer token; HelmRepository events are skipped.
func TestOTELSpan(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 200, `{}` })
	n := newNotifier(t, Options{Type: "otel", Address: srv.URL, Token: caseToken, Headers: map[string]string{"X-Scope-OrgID": "platform"}})
	ctx := WithAlert(context.Background(), AlertRef{Namespace: "flux-system", Name: "all", UID: "alert-uid"})
	if err := n.Post(ctx, alertEvent("error", "HealthCheckFailed")); err != nil {
		t.Fatal(err)
	}
	wantRequest(t, srv.reqs[0], http.MethodPost, "/v1/traces", "Authorization", "Bearer "+caseToken)
	if srv.reqs[0].Header.Get("X-Scope-OrgID") != "platform" || srv.reqs[0].Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", srv.reqs[0].Header)
	}
	sum := sha256.Sum256([]byte("alert-uid:main@sha1:" + sha))
	rs := "resourceSpans.0."
	sp := rs + "scopeSpans.0.spans.0."
	wantJSON(t, srv.bodies[0], map[string]any{
		rs + "resource.attributes.0.key": "service.name", rs + "resource.attributes.0.value.stringValue": "flux-system/all",
		rs + "scopeSpans.0.scope.name": "flux:notification-controller",
		sp + "traceId":                 hex.EncodeToString(sum[:16]), sp + "spanId": "", sp + "name": "Kustomization: flux-system/apps",
		sp + "kind": float64(1), sp + "startTimeUnixNano": "1767323045000000000", sp + "endTimeUnixNano": "",
		sp + "attributes.0.key": "object.uid", sp + "attributes.0.value.stringValue": "6f1c2a8e-uid",
		sp + "attributes.4.key": "revision", sp + "status.code": float64(2), sp + "status.message": "",
	})
	helm := alertEvent("info", "Succeeded")
	helm.InvolvedObject.Kind = "HelmRepository"
	if err := n.Post(ctx, helm); err != nil || len(srv.reqs) != 1 {
		t.Errorf("HelmRepository: %v, %d requests", err, len(srv.reqs))
	}
	if err := n.Post(context.Background(), alertEvent("info", "Succeeded")); err == nil || err.Error() != "otel: the alert is not known" {
		t.Errorf("without the alert: %v", err)
	}
}

// TestOTELAuthAndBadInput: username and password are basic auth, a
// headers' Authorization wins; refused answers and bad addresses give
// secret-free errors.
func TestOTELAuthAndBadInput(t *testing.T) {
	srv := newRecorder(t, func(n int) (int, string) {
		if n > 2 {
			return 401, `unauthorized`
		}
		return 200, `{}`
	})
	ctx := WithAlert(context.Background(), AlertRef{Namespace: "ns", Name: "a", UID: "u"})
	for _, o := range []Options{
		{Username: "collector", Password: casePassword},
		{Token: caseToken, Headers: map[string]string{"Authorization": "Api-Key k"}},
	} {
		o.Type, o.Address = "otel", srv.URL+"/otlp/v1/traces"
		if err := newNotifier(t, o).Post(ctx, alertEvent("info", "Succeeded")); err != nil {
			t.Fatal(err)
		}
	}
	if srv.reqs[0].URL.Path != "/otlp/v1/traces" || srv.reqs[0].Header.Get("Authorization") != basic("collector", casePassword) ||
		srv.reqs[1].Header.Get("Authorization") != "Api-Key k" {
		t.Errorf("auth %q, %q", srv.reqs[0].Header.Get("Authorization"), srv.reqs[1].Header.Get("Authorization"))
	}
	err := newNotifier(t, Options{Type: "otel", Address: srv.URL, Token: caseToken}).Post(ctx, alertEvent("info", "Succeeded"))
	if err == nil || err.Error() != "otel: answered 401: unauthorized" {
		t.Errorf("refused: %v", err)
	}
	if _, err := New(Options{Type: "otel", Address: "http://" + caseToken + "@[::1"}); err == nil || strings.Contains(err.Error(), caseToken) ||
		!strings.HasPrefix(err.Error(), "otel provider: the address is not a URL") {
		t.Errorf("bad address: %v", err)
	}
}
