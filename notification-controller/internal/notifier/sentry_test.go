package notifier

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// envelope splits a Sentry envelope into its header, item header and item.
func envelope(t *testing.T, body []byte) (header, itemHeader map[string]any, item []byte) {
	t.Helper()
	lines := bytes.SplitN(body, []byte("\n"), 3)
	if len(lines) != 3 || json.Unmarshal(lines[0], &header) != nil || json.Unmarshal(lines[1], &itemHeader) != nil {
		t.Fatalf("not an envelope: %s", body)
	}
	if n, _ := itemHeader["length"].(float64); int(n) != len(lines[2]) {
		t.Errorf("item length %v, item has %d bytes", itemHeader["length"], len(lines[2]))
	}
	return header, itemHeader, lines[2]
}

// TestSentryEnvelope: an error is a Sentry event and an info event a
// transaction, each sent as an envelope to the DSN's project with the
// public key in X-Sentry-Auth and spec.channel as the environment.
func TestSentryEnvelope(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 200, `{"id":"x"}` })
	dsn := strings.Replace(srv.URL, "http://", "http://pubkey"+caseToken+"@", 1) + "/sentry/42"
	n := newNotifier(t, Options{Type: "sentry", Address: dsn, Channel: "staging"})
	for _, sev := range []string{"error", "info"} {
		if err := n.Post(context.Background(), alertEvent(sev, "HealthCheckFailed")); err != nil {
			t.Fatal(err)
		}
	}
	id := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for i, r := range srv.reqs {
		if r.URL.Path != "/sentry/api/42/envelope/" || r.Header.Get("Content-Type") != "application/x-sentry-envelope" ||
			!strings.HasPrefix(r.Header.Get("X-Sentry-Auth"), "Sentry sentry_version=7, ") ||
			!strings.HasSuffix(r.Header.Get("X-Sentry-Auth"), ", sentry_key=pubkey"+caseToken) {
			t.Errorf("request %s %q", r.URL.Path, r.Header.Get("X-Sentry-Auth"))
		}
		header, itemHeader, item := envelope(t, srv.bodies[i])
		if eid, _ := header["event_id"].(string); !id.MatchString(eid) || header["dsn"] != nil {
			t.Errorf("envelope header %v", header)
		}
		common := map[string]any{"event_id": header["event_id"].(string), "platform": "go", "environment": "staging",
			"transaction": "Kustomization: flux-system/apps", "timestamp": "2026-01-02T03:04:05Z", "message": ""}
		if i == 0 {
			if itemHeader["type"] != "event" {
				t.Errorf("item type %v", itemHeader["type"])
			}
			common["level"], common["server_name"], common["contexts.metadata.summary"] = "error", "kustomize-controller", "prod"
		} else {
			if itemHeader["type"] != "transaction" {
				t.Errorf("item type %v", itemHeader["type"])
			}
			common["type"], common["start_timestamp"], common["contexts.trace.op"] = "transaction", "2026-01-02T03:04:05Z", "event"
			common["contexts.trace.trace_id"], common["spans.0.parent_span_id"], common["tags.flux_reason"] = "", "", "HealthCheckFailed"
			common["tags.summary"], common["spans.0.tags.flux_involved_object_name"] = "prod", "apps"
		}
		wantJSON(t, item, common)
	}
}

// TestSentryBadInput: a malformed DSN names what is wrong without the DSN;
// a refused envelope is an error without it either.
func TestSentryBadInput(t *testing.T) {
	for dsn, want := range map[string]string{
		"":                          "sentry provider: no DSN (the secret's address key or spec.address)",
		"s3cr3t@sentry.io/1":        "sentry provider: the DSN is not an http(s) URL",
		"https://sentry.io/1":       "sentry provider: the DSN has no public key (https://<key>@<host>/<project>)",
		"https://s3cr3t@sentry.io/": "sentry provider: the DSN has no project ID (https://<key>@<host>/<project>)",
		"https://s3cr3t:x@[::1/1":   "sentry provider: the DSN is not an http(s) URL",
	} {
		if _, err := New(Options{Type: "sentry", Address: dsn}); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", dsn, err, want)
		}
	}
	for _, code := range []int{403, 500} {
		srv := newRecorder(t, func(int) (int, string) { return code, `{"detail":"denied"}` })
		dsn := strings.Replace(srv.URL, "http://", "http://s3cr3t@", 1) + "/7"
		err := newNotifier(t, Options{Type: "sentry", Address: dsn}).Post(context.Background(), alertEvent("error", "Failed"))
		if err == nil || err.Error() != "sentry: answered "+strconv.Itoa(code)+`: {"detail":"denied"}` {
			t.Errorf("answer %d: %v", code, err)
		}
	}
}
