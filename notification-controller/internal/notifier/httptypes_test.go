package notifier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The secrets of the chat and alerting cases: none may appear in an error.
const (
	caseToken    = "tok-s3cr3t"
	casePassword = "pw-s3cr3t"
)

// httpCase is one chat or alerting type: valid options against a sink at
// base, and the check of the one request an error event makes.
type httpCase struct {
	typ   string
	opts  func(base string) Options
	check func(t *testing.T, r *http.Request, body []byte)
	// needsToken: the type refuses options without a token.
	needsToken bool
}

func alertEvent(severity, reason string) *events.Event {
	ev := testEvent(severity, reason, map[string]string{"revision": "main@sha1:" + sha, "summary": "prod"})
	ev.InvolvedObject.UID = "6f1c2a8e-uid"
	ev.Timestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return ev
}

// jsonAt walks a decoded JSON value along a dotted path (list indexes as
// numbers) and returns what is there, or nil.
func jsonAt(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// wantJSON checks that each path holds a value of the type of want (a
// string, float64, bool, []any or map) and, for strings and numbers
// given non-zero, that value; "" means any non-empty string.
func wantJSON(t *testing.T, body []byte, want map[string]any) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	for path, w := range want {
		got := jsonAt(doc, path)
		switch w := w.(type) {
		case string:
			s, ok := got.(string)
			if !ok || s == "" || (w != "" && s != w) {
				t.Errorf("%s = %#v, want string %q in %s", path, got, w, body)
			}
		case float64:
			if n, ok := got.(float64); !ok || (w != 0 && n != w) {
				t.Errorf("%s = %#v, want number %v", path, got, w)
			}
		case bool:
			if b, ok := got.(bool); !ok || b != w {
				t.Errorf("%s = %#v, want %v", path, got, w)
			}
		case []any:
			if l, ok := got.([]any); !ok || len(l) < len(w) {
				t.Errorf("%s = %#v, want a list of at least %d", path, got, len(w))
			}
		case map[string]any:
			if _, ok := got.(map[string]any); !ok {
				t.Errorf("%s = %#v, want an object", path, got)
			}
		case nil:
			if got != nil {
				t.Errorf("%s = %#v, want absent or null", path, got)
			}
		}
	}
}

func wantRequest(t *testing.T, r *http.Request, method, path, header, value string) {
	t.Helper()
	if r.Method != method || r.URL.Path != path || r.Header.Get(header) != value {
		t.Errorf("request %s %s %s=%q, want %s %s %q", r.Method, r.URL.Path, header, r.Header.Get(header), method, path, value)
	}
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// httpCases are checked against the schema each service documents.
var httpCases = []httpCase{
	{typ: "rocket", opts: func(b string) Options { return Options{Address: b + "/hooks/abc/def", Channel: "#ops"} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			// Rocket.Chat's incoming webhook takes Slack's message format.
			wantRequest(t, r, "POST", "/hooks/abc/def", "Content-Type", "application/json")
			wantJSON(t, body, map[string]any{"channel": "#ops", "attachments.0.color": "#FF0000",
				"attachments.0.author_name": "kustomization/apps.flux-system", "attachments.0.text": "",
				"attachments.0.fields.0.title": "revision", "attachments.0.fields.1.value": "prod"})
		}},
	{typ: "googlechat", opts: func(b string) Options { return Options{Address: b + "/v1/spaces/AAA/messages?key=k"} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/v1/spaces/AAA/messages", "Content-Type", "application/json")
			wantJSON(t, body, map[string]any{"cards.0.header.title": "kustomization/apps.flux-system",
				"cards.0.header.subtitle": "kustomize-controller", "cards.0.sections.0.widgets.0.textParagraph.text": "",
				"cards.0.sections.1.widgets.0.keyValue.topLabel": "revision", "cards.0.sections.1.widgets.1.keyValue.content": "prod"})
			var doc any
			_ = json.Unmarshal(body, &doc)
			if text, _ := jsonAt(doc, "cards.0.sections.0.widgets.0.textParagraph.text").(string); !strings.HasPrefix(text, `<font color="#ff0000">`) || r.URL.Query().Get("key") != "k" {
				t.Errorf("error text not red or query lost: %s", body)
			}
		}},
	{typ: "webex", needsToken: true, opts: func(b string) Options {
		return Options{Address: b + "/v1/messages", Token: caseToken, Channel: "Y2lzY29zcGFyazovL3Jvb20"}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/v1/messages", "Authorization", "Bearer "+caseToken)
		wantJSON(t, body, map[string]any{"roomId": "Y2lzY29zcGFyazovL3Jvb20",
			"markdown": "💣 **kustomization/apps.flux-system**\nReconciliation finished in 1.2s, next run in 10m0s\nsecond line\n>**revision**: main@sha1:" + sha + "\n>**summary**: prod\n"})
	}},
	{typ: "telegram", needsToken: true, opts: func(b string) Options { return Options{Address: b, Token: caseToken, Channel: "-100123:7"} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/bot"+caseToken+"/sendMessage", "Content-Type", "application/json")
			wantJSON(t, body, map[string]any{"chat_id": "-100123", "message_thread_id": "7", "parse_mode": "MarkdownV2",
				"text": "*🚨 kustomization/apps/flux\\-system*\nReconciliation finished in 1\\.2s, next run in 10m0s\nsecond line\n" +
					"\\- *revision*: main@sha1:" + sha + "\n\\- *summary*: prod\n"})
		}},
	{typ: "lark", opts: func(b string) Options { return Options{Address: b + "/open-apis/bot/v2/hook/xyz"} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/open-apis/bot/v2/hook/xyz", "Content-Type", "application/json")
			wantJSON(t, body, map[string]any{"msg_type": "interactive", "card.config.wide_screen_mode": true,
				"card.header.title.tag": "plain_text", "card.header.title.content": "🚨 kustomization/apps.flux-system",
				"card.header.template": "red", "card.elements.0.tag": "div", "card.elements.0.text.tag": "lark_md",
				"card.elements.0.text.content": "**Reconciliation finished in 1.2s, next run in 10m0s\nsecond line**\n\nrevision: main@sha1:" + sha + "\nsummary: prod\n"})
		}},
	{typ: "matrix", needsToken: true, opts: func(b string) Options {
		return Options{Address: b, Token: caseToken, Channel: "!room:example.org"}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		if r.Method != http.MethodPut || r.Header.Get("Authorization") != "Bearer "+caseToken ||
			!regexp.MustCompile(`^/_matrix/client/r0/rooms/!room:example\.org/send/m\.room\.message/[0-9a-f]{40}$`).MatchString(r.URL.Path) {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		wantJSON(t, body, map[string]any{"msgtype": "m.text",
			"body": "🚨 kustomization/apps.flux-system\nReconciliation finished in 1.2s, next run in 10m0s\nsecond line\n- revision: main@sha1:" + sha + "\n- summary: prod\n"})
	}},
	{typ: "zulip", opts: func(b string) Options {
		return Options{Address: b + "/ignored", Channel: "ops/flux", Username: "bot@example.org", Password: casePassword}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/api/v1/messages", "Authorization", basic("bot@example.org", casePassword))
		form, err := url.ParseQuery(string(body))
		if err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || form.Get("type") != "stream" ||
			form.Get("to") != "ops" || form.Get("topic") != "flux" || !strings.HasPrefix(form.Get("content"), "## Flux Status\n\n⚠️ Kustomization/flux-system/apps\n\n") ||
			!strings.HasSuffix(form.Get("content"), "Metadata:\n* `revision`: main@sha1:"+sha+"\n* `summary`: prod\n") {
			t.Errorf("form %v (%v)", form, err)
		}
	}},
	{typ: "opsgenie", needsToken: true, opts: func(b string) Options {
		return Options{Address: b + "/v2/alerts", Token: caseToken, ProviderUID: "prov-uid"}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/v2/alerts", "Authorization", "GenieKey "+caseToken)
		wantJSON(t, body, map[string]any{"message": "Kustomization/apps", "description": "",
			"details.severity": "error", "details.summary": "prod", "alias": ""})
		var a struct{ Alias string }
		_ = json.Unmarshal(body, &a)
		if !hex64.MatchString(a.Alias) {
			t.Errorf("alias %q", a.Alias)
		}
	}},
	{typ: "alertmanager", opts: func(b string) Options {
		return Options{Address: b + "/api/v2/alerts", Username: "am", Password: casePassword, Token: caseToken}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/api/v2/alerts", "Authorization", basic("am", casePassword))
		wantJSON(t, body, map[string]any{"0.status": "firing", "0.startsAt": "2026-01-02T03:04:05Z",
			"0.labels.alertname": "FluxKustomizationHealthcheckfailed", "0.labels.severity": "error",
			"0.labels.reason": "HealthCheckFailed", "0.labels.kind": "Kustomization", "0.labels.name": "apps",
			"0.labels.namespace": "flux-system", "0.labels.reportingcontroller": "kustomize-controller",
			"0.labels.revision": "main@sha1:" + sha, "0.labels.summary": nil,
			"0.annotations.summary": "prod", "0.annotations.message": "", "0.endsAt": nil})
	}},
	{typ: "grafana", opts: func(b string) Options { return Options{Address: b + "/api/annotations", Token: caseToken} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/api/annotations", "Authorization", "Bearer "+caseToken)
			wantJSON(t, body, map[string]any{"when": float64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()),
				"text": "kustomization/apps.flux-system", "tags.0": "flux", "tags.1": "kustomize-controller",
				"tags.2": "revision: main@sha1|" + sha, "tags.3": "summary: prod", "tags.4": "kind: Kustomization",
				"tags.5": "name: apps", "tags.6": "namespace: flux-system"})
		}},
	{typ: "pagerduty", opts: func(b string) Options { return Options{Address: b + "/ignored/path", Channel: "R0UTINGKEY"} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/v2/enqueue", "Content-Type", "application/json")
			wantJSON(t, body, map[string]any{"routing_key": "R0UTINGKEY", "event_action": "trigger",
				"dedup_key": "6f1c2a8e-uid", "payload.summary": "health check failed: kustomization/apps",
				"payload.source": "Flux kustomize-controller", "payload.severity": "error",
				"payload.timestamp": "2026-01-02T03:04:05Z", "payload.component": "apps", "payload.group": "Kustomization",
				"payload.custom_details.message": "", "payload.custom_details.metadata.summary": "prod"})
		}},
	{typ: "datadog", needsToken: true, opts: func(b string) Options { return Options{Address: b + "/ignored", Token: caseToken} },
		check: func(t *testing.T, r *http.Request, body []byte) {
			wantRequest(t, r, "POST", "/api/v1/events", "DD-API-KEY", caseToken)
			wantJSON(t, body, map[string]any{"title": "Events from the Kustomization apps/flux-system", "text": "",
				"source_type_name": "fluxcd", "alert_type": "error", "date_happened": float64(1767323045),
				"tags.0": "flux_reporting_controller:kustomize-controller", "tags.1": "flux_reason:healthcheckfailed",
				"tags.2": "kube_kind:kustomization", "tags.5": "revision:main@sha1:" + sha, "tags.6": "summary:prod"})
		}},
	{typ: "zoom", needsToken: true, opts: func(b string) Options {
		return Options{Address: b + "/chat/webhooks/incomingwebhook/xyz", Token: caseToken}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/chat/webhooks/incomingwebhook/xyz", "Authorization", caseToken)
		if r.URL.Query().Get("format") != "full" {
			t.Errorf("query %q", r.URL.RawQuery)
		}
		wantJSON(t, body, map[string]any{"content.head.text": "kustomization/apps.flux-system",
			"content.head.sub_head.text": "error", "content.body.0.type": "message", "content.body.0.text": "",
			"content.body.1.type": "fields", "content.body.1.items.0.key": "revision", "content.body.1.items.1.value": "prod"})
	}},
	{typ: "incident.io", needsToken: true, opts: func(b string) Options {
		return Options{Address: b + "/v2/alert_events/http/01CONFIG", Token: caseToken}
	}, check: func(t *testing.T, r *http.Request, body []byte) {
		wantRequest(t, r, "POST", "/v2/alert_events/http/01CONFIG", "Authorization", "Bearer "+caseToken)
		wantJSON(t, body, map[string]any{"title": "kustomization/apps.flux-system: HealthCheckFailed", "status": "firing",
			"deduplication_key": "6f1c2a8e-uid", "description": "", "metadata.severity": "error",
			"metadata.reason": "HealthCheckFailed", "metadata.reportingController": "kustomize-controller", "metadata.summary": "prod"})
	}},
}

// TestChatAndAlertingPayloads: each type posts an error event to its
// service's endpoint with the documented fields, types and auth header.
func TestChatAndAlertingPayloads(t *testing.T) {
	for _, c := range httpCases {
		t.Run(c.typ, func(t *testing.T) {
			srv := newRecorder(t, func(int) (int, string) { return 200, `{"ok":true,"code":0}` })
			opts := c.opts(srv.URL)
			opts.Type = c.typ
			n := newNotifier(t, opts)
			if err := n.Post(context.Background(), alertEvent("error", "HealthCheckFailed")); err != nil {
				t.Fatal(err)
			}
			if len(srv.reqs) != 1 {
				t.Fatalf("%d requests", len(srv.reqs))
			}
			c.check(t, srv.reqs[0], srv.bodies[0])
		})
	}
}

// TestChatAndAlertingBadInput: a refused answer, a malformed address and a
// missing token each give a stable error that names the type and carries
// no secret.
func TestChatAndAlertingBadInput(t *testing.T) {
	noSecret := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) ||
			strings.Contains(err.Error(), caseToken) || strings.Contains(err.Error(), casePassword) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %v, want %q and no secret", err, want)
		}
	}
	for _, c := range httpCases {
		t.Run(c.typ, func(t *testing.T) {
			for _, code := range []int{401, 503} {
				srv := newRecorder(t, func(int) (int, string) { return code, `{"error":"refused"}` })
				opts := c.opts(srv.URL)
				opts.Type = c.typ
				err := newNotifier(t, opts).Post(context.Background(), alertEvent("error", "HealthCheckFailed"))
				noSecret(t, err, c.typ+": answered "+strconv.Itoa(code)+`: {"error":"refused"}`)
			}
			opts := c.opts("http://s3cr3t@[::1")
			opts.Type = c.typ
			_, err := New(opts)
			noSecret(t, err, c.typ+" provider: the address is not a URL")
			if c.needsToken {
				opts := c.opts("https://example.org")
				opts.Type, opts.Token = c.typ, ""
				_, err := New(opts)
				if err == nil || err.Error() != c.typ+" provider: the secret has no token key" {
					t.Errorf("no token: %v", err)
				}
			}
		})
	}
}

// TestPagerDutyResolvesOnSuccess: an info event resolves the object's
// incident and is sent as a change event; Progressing is not sent.
func TestPagerDutyResolvesOnSuccess(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 202, `{"status":"success"}` })
	n := newNotifier(t, Options{Type: "pagerduty", Address: srv.URL, Channel: "R0UTINGKEY"})
	if err := n.Post(context.Background(), alertEvent("info", "Progressing")); err != nil || len(srv.reqs) != 0 {
		t.Fatalf("Progressing: %v, %d requests", err, len(srv.reqs))
	}
	if err := n.Post(context.Background(), alertEvent("info", "ReconciliationSucceeded")); err != nil {
		t.Fatal(err)
	}
	if len(srv.reqs) != 2 || srv.reqs[0].URL.Path != "/v2/enqueue" || srv.reqs[1].URL.Path != "/v2/change/enqueue" {
		t.Fatalf("%d requests", len(srv.reqs))
	}
	wantJSON(t, srv.bodies[0], map[string]any{"routing_key": "R0UTINGKEY", "event_action": "resolve", "dedup_key": "6f1c2a8e-uid", "payload": nil})
	wantJSON(t, srv.bodies[1], map[string]any{"routing_key": "R0UTINGKEY", "payload.summary": "reconciliation succeeded: kustomization/apps",
		"payload.source": "Flux kustomize-controller", "payload.timestamp": "2026-01-02T03:04:05Z", "payload.custom_details.metadata.summary": "prod"})
	if _, err := New(Options{Type: "pagerduty", Address: srv.URL}); err == nil || err.Error() != "pagerduty provider: no channel (spec.channel: the integration key)" {
		t.Errorf("no routing key: %v", err)
	}
}

// TestIncidentioResolvesOnSuccess: an info event resolves, keyed by the
// object's UID; Progressing is not sent.
func TestIncidentioResolvesOnSuccess(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 202, `{}` })
	n := newNotifier(t, Options{Type: "incident.io", Address: srv.URL, Token: caseToken})
	_ = n.Post(context.Background(), alertEvent("info", "Progressing"))
	if err := n.Post(context.Background(), alertEvent("info", "ReconciliationSucceeded")); err != nil || len(srv.reqs) != 1 {
		t.Fatalf("%v, %d requests", err, len(srv.reqs))
	}
	wantJSON(t, srv.bodies[0], map[string]any{"status": "resolved", "deduplication_key": "6f1c2a8e-uid", "metadata.severity": "info"})
}

// TestLarkRefusalInABody: Lark answers 200 with a non-zero code when it
// refuses a message; that is an error.
func TestLarkRefusalInABody(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) {
		return 200, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`
	})
	err := newNotifier(t, Options{Type: "lark", Address: srv.URL + "/open-apis/bot/v2/hook/s3cr3t"}).Post(context.Background(), alertEvent("info", "Succeeded"))
	if err == nil || !strings.HasPrefix(err.Error(), "lark: answered code 19021: sign match fail") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v", err)
	}
}

// TestTelegramDefaultsToTheBotAPI: without an address the Bot API of
// api.telegram.org is used; spec.channel is required; the token never
// shows in an error.
func TestTelegramDefaultsToTheBotAPI(t *testing.T) {
	n, err := New(Options{Type: "telegram", Token: caseToken, Channel: "@flux"})
	if err != nil || n.(*Telegram).address != TelegramAPI+"/bot"+caseToken+"/sendMessage" || n.(*Telegram).thread != "" {
		t.Errorf("%v %+v", err, n)
	}
	if _, err := New(Options{Type: "telegram", Token: caseToken}); err == nil || err.Error() != "telegram provider: no channel (spec.channel: the chat)" {
		t.Errorf("no chat: %v", err)
	}
	// The token is in the path: an unreachable server's error leaves it out.
	err = newNotifier(t, Options{Type: "telegram", Address: "http://127.0.0.1:1", Token: caseToken, Channel: "@flux"}).Post(context.Background(), alertEvent("info", "Succeeded"))
	if err == nil || !strings.HasPrefix(err.Error(), "telegram: sending: ") || strings.Contains(err.Error(), caseToken) {
		t.Errorf("unreachable: %v", err)
	}
}

// TestRequiredChannelsAndCredentials: the types that cannot deliver without
// a channel or credentials say which field is missing.
func TestRequiredChannelsAndCredentials(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Type: "webex", Address: "https://webexapis.com/v1/messages", Token: caseToken}, "webex provider: no channel (spec.channel: the room ID)"},
		{Options{Type: "matrix", Address: "https://matrix.org", Token: caseToken}, "matrix provider: no channel (spec.channel: the room ID)"},
		{Options{Type: "zulip", Address: "https://z.example.org", Channel: "ops", Username: "u", Password: casePassword}, "zulip provider: spec.channel must be <channel>/<topic>"},
		{Options{Type: "zulip", Address: "https://z.example.org", Channel: "ops/flux", Username: "u"}, "zulip provider: the secret needs username and password keys (the bot's email and API key)"},
		{Options{Type: "rocket"}, "rocket provider: no address (spec.address or the secret's address key)"},
	} {
		if _, err := New(c.opts); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.opts.Type, err, c.want)
		}
	}
}

// TestAlertmanagerBearerWithoutBasic: a token alone is a bearer token;
// nothing at all sends no Authorization header.
func TestAlertmanagerBearerWithoutBasic(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 200, `` })
	for _, o := range []Options{{Token: caseToken}, {}} {
		o.Type, o.Address = "alertmanager", srv.URL+"/api/v2/alerts"
		if err := newNotifier(t, o).Post(context.Background(), alertEvent("info", "ReconciliationSucceeded")); err != nil {
			t.Fatal(err)
		}
	}
	if srv.reqs[0].Header.Get("Authorization") != "Bearer "+caseToken || srv.reqs[1].Header.Get("Authorization") != "" {
		t.Errorf("Authorization %q, %q", srv.reqs[0].Header.Get("Authorization"), srv.reqs[1].Header.Get("Authorization"))
	}
	wantJSON(t, srv.bodies[0], map[string]any{"0.labels.alertname": "FluxKustomizationReconciliationsucceeded", "0.labels.severity": "info"})
}
