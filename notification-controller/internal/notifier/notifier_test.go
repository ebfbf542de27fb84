package notifier

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/events"
	corev1 "k8s.io/api/core/v1"
)

// recorder is a local HTTP server standing in for GitHub's, GitLab's,
// Slack's, Discord's or Teams' API; it records requests and answers
// with answer (or 201 and "{}").
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	answer func(n int) (int, string)
}

func newRecorder(t *testing.T, answer func(n int) (int, string)) *recorder {
	r := &recorder{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.bodies = append(r.bodies, b)
		n := len(r.reqs)
		r.mu.Unlock()
		code, body := http.StatusCreated, "{}"
		if r.answer != nil {
			code, body = r.answer(n)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(r.Close)
	return r
}

var fastRetry = Retry{Max: 2, Min: time.Millisecond, Cap: 5 * time.Millisecond}

// newNotifier is New with a fast-retrying client.
func newNotifier(t *testing.T, opts Options) Notifier {
	t.Helper()
	opts.Client = NewClient(fastRetry, nil)
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testEvent(severity, reason string, md map[string]string) *events.Event {
	return &events.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "flux-system", Name: "apps",
			APIVersion: "kustomize.toolkit.fluxcd.io/v1"},
		Severity: severity, Reason: reason, Message: "Reconciliation finished in 1.2s, next run in 10m0s\nsecond line",
		Metadata: md, ReportingController: "kustomize-controller",
	}
}

const sha = "0123456789abcdef0123456789abcdef01234567"

// TestGitHubCommitStatus: a GitHub provider whose address is a repository
// on a local server posts the status to <host>/api/v3/repos/<owner>/<repo>/statuses/<sha>.
func TestGitHubCommitStatus(t *testing.T) {
	srv := newRecorder(t, nil)
	n := newNotifier(t, Options{Type: "github", Address: srv.URL + "/acme/platform.git", Token: "ghp_secret", ProviderUID: "4e8a9c1d-aaaa-bbbb"})
	if err := n.Post(context.Background(), testEvent("info", "ReconciliationSucceeded", map[string]string{"revision": "main@sha1:" + sha})); err != nil {
		t.Fatal(err)
	}
	if err := n.Post(context.Background(), testEvent("error", "HealthCheckFailed", map[string]string{"revision": "main@sha1:" + sha})); err != nil {
		t.Fatal(err)
	}
	// Each status is read (GET) before it is set (POST).
	if len(srv.reqs) != 4 {
		t.Fatalf("%d requests", len(srv.reqs))
	}
	for i, want := range []map[string]string{
		{"state": "success", "context": "kustomization/apps/4e8a9c1d", "description": "reconciliation succeeded"},
		{"state": "failure", "context": "kustomization/apps/4e8a9c1d", "description": "health check failed"},
	} {
		i = 2*i + 1
		r := srv.reqs[i]
		if r.Method != http.MethodPost || r.URL.Path != "/api/v3/repos/acme/platform/statuses/"+sha || r.Header.Get("Authorization") != "Bearer ghp_secret" {
			t.Errorf("request %s %s auth %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		var got map[string]string
		if err := json.Unmarshal(srv.bodies[i], &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got["state"] != want["state"] || got["context"] != want["context"] || got["description"] != want["description"] {
			t.Errorf("status %v, want %v", got, want)
		}
	}
	// A revision that is not a commit is an error, not a guess.
	err := n.Post(context.Background(), testEvent("info", "Succeeded", map[string]string{"revision": "v1.0.0@sha256:abc"}))
	if err == nil || !strings.Contains(err.Error(), "not a Git commit") {
		t.Errorf("OCI revision: %v", err)
	}
}

// TestGitLabCommitStatus: the project path is URL-encoded, the token goes
// in PRIVATE-TOKEN, the commit comes from originRevision before revision.
func TestGitLabCommitStatus(t *testing.T) {
	srv := newRecorder(t, nil)
	n := newNotifier(t, Options{Type: "gitlab", Address: srv.URL + "/group/sub/project", Token: "glpat-secret", ProviderUID: "77aa-1"})
	other := strings.Repeat("f", 40)
	if err := n.Post(context.Background(), testEvent("error", "BuildFailed", map[string]string{"revision": "main@sha1:" + other, "originRevision": "sha1:" + sha})); err != nil {
		t.Fatal(err)
	}
	if len(srv.reqs) != 2 {
		t.Fatalf("%d requests, want a GET and a POST", len(srv.reqs))
	}
	r := srv.reqs[1]
	if r.URL.EscapedPath() != "/api/v4/projects/group%2Fsub%2Fproject/statuses/"+sha || r.Header.Get("PRIVATE-TOKEN") != "glpat-secret" {
		t.Errorf("request %s token %q", r.URL.EscapedPath(), r.Header.Get("PRIVATE-TOKEN"))
	}
	var got map[string]string
	_ = json.Unmarshal(srv.bodies[1], &got)
	if got["state"] != "failed" || got["name"] != "kustomization/apps/77aa" || got["description"] != "build failed" {
		t.Errorf("status %v", got)
	}
}

// TestSlackToken: with a token the request carries a bearer token and the
// answer must be {"ok":true}; errors never contain the token or address.
func TestSlackToken(t *testing.T) {
	srv := newRecorder(t, func(n int) (int, string) {
		if n == 1 {
			return 200, `{"ok":true}`
		}
		return 200, `{"ok":false,"error":"channel_not_found"}`
	})
	n := newNotifier(t, Options{Type: "slack", Address: srv.URL + "/api/chat.postMessage", Token: "xoxb-secret", Channel: "C123", Username: "flux"})
	ev := testEvent("info", "ReconciliationSucceeded", map[string]string{"revision": "main@sha1:" + sha, "summary": "prod"})
	if err := n.Post(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if srv.reqs[0].Header.Get("Authorization") != "Bearer xoxb-secret" {
		t.Errorf("Authorization %q", srv.reqs[0].Header.Get("Authorization"))
	}
	var msg struct {
		Channel, Username string
		Attachments       []struct {
			Color      string
			AuthorName string `json:"author_name"`
			Fields     []struct{ Title, Value string }
		}
	}
	_ = json.Unmarshal(srv.bodies[0], &msg)
	if msg.Channel != "C123" || msg.Username != "flux" || len(msg.Attachments) != 1 || len(msg.Attachments[0].Fields) != 2 ||
		msg.Attachments[0].Fields[0].Title != "revision" || msg.Attachments[0].Fields[1].Title != "summary" {
		t.Errorf("payload %s", srv.bodies[0])
	}
	err := n.Post(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "channel_not_found") || strings.Contains(err.Error(), "xoxb") || strings.Contains(err.Error(), srv.URL) {
		t.Errorf("not-ok answer: %v", err)
	}
	if _, err := New(Options{Type: "slack", Token: "xoxb"}); err != nil {
		t.Errorf("a token without address must default to chat.postMessage: %v", err)
	}
}

// TestDiscord: Discord gets the Slack payload on <webhook>/slack.
func TestDiscord(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 204, "" })
	ev := testEvent("error", "BuildFailed", map[string]string{"revision": "main@sha1:" + sha})
	d := newNotifier(t, Options{Type: "discord", Address: srv.URL + "/api/webhooks/1/tok"})
	if err := d.Post(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if srv.reqs[0].URL.Path != "/api/webhooks/1/tok/slack" || !strings.Contains(string(srv.bodies[0]), `"color":"danger"`) {
		t.Errorf("discord %s %s", srv.reqs[0].URL.Path, srv.bodies[0])
	}
}

// TestTeams: an Office 365 connector address (`*.webhook.office.com`) gets
// Flux's legacy MessageCard, any other address (Teams workflows) Flux's
// Adaptive Card layout. The whole JSON is compared.
func TestTeams(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 200, "1" })
	// Every host resolves to the recorder, so the connector's host name is kept.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	md := map[string]string{"revision": "main@sha1:" + sha, "summary": "prod cluster", "env": "prod"}
	// connector is the legacy MessageCard, workflows the Adaptive Card; only
	// the colour of an error differs between severities.
	connector := func(themeColor string) string {
		return `{
			"@type": "MessageCard", "@context": "http://schema.org/extensions", "themeColor": "` + themeColor + `",
			"summary": "kustomization/apps.flux-system",
			"sections": [{"activityTitle": "Reconciliation finished in 1.2s, next run in 10m0s\nsecond line",
				"activitySubtitle": "kustomization/apps.flux-system",
				"facts": [{"name": "env", "value": "prod"}, {"name": "revision", "value": "main@sha1:` + sha + `"},
					{"name": "summary", "value": "prod cluster"}]}]}`
	}
	workflows := func(color string) string {
		return `{
			"type": "message",
			"attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": {
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
				"msteams": {"width": "Full"},
				"body": [{"type": "Container", "items": [
					{"type": "TextBlock", "text": "kustomization/apps.flux-system", "size": "large", "weight": "bolder", "wrap": true},
					{"type": "TextBlock", "text": "Reconciliation finished in 1.2s, next run in 10m0s\nsecond line", ` + color + `"wrap": true},
					{"type": "FactSet", "facts": [{"title": "summary", "value": "prod cluster"}, {"title": "env", "value": "prod"},
						{"title": "revision", "value": "main@sha1:` + sha + `"}]}]}]}}]}`
	}
	cases := []struct {
		name, address, severity, want string
	}{
		{"connector, error", "http://acme.webhook.office.com:" + port + "/webhookb2/x/IncomingWebhook/y", "error", connector("FF0000")},
		{"connector, info", "http://ACME.webhook.office.com:" + port + "/webhookb2/x", "info", connector("0076D7")},
		{"workflows, error", "http://prod-01.westeurope.logic.azure.com:" + port + "/workflows/abc/triggers/manual/paths/invoke", "error",
			workflows(`"color": "attention", `)},
		{"workflows, info", srv.URL + "/workflows/x", "info", workflows("")},
	}
	for i, c := range cases {
		m, err := New(Options{Type: "msteams", Address: c.address, Client: NewClient(fastRetry, tr)})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Post(context.Background(), testEvent(c.severity, "BuildFailed", md)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got, want any
		if err := json.Unmarshal(srv.bodies[i], &got); err != nil {
			t.Fatalf("%s: %s: %v", c.name, srv.bodies[i], err)
		}
		if err := json.Unmarshal([]byte(c.want), &want); err != nil {
			t.Fatalf("%s: bad expectation: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: payload\n%s\nwant\n%s", c.name, srv.bodies[i], c.want)
		}
	}
	// The reason is kept, the address (which carries a token) is not.
	if _, err := New(Options{Type: "msteams", Address: "https://acme.webhook.office.com:x/webhookb2/s3cr3t"}); err == nil ||
		strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), `invalid port ":x" after host`) {
		t.Errorf("invalid address: %v", err)
	}
}

// TestRetries: 500 and 429 are retried up to Max times; 400 is not; the
// error does not reveal the address.
func TestRetries(t *testing.T) {
	srv := newRecorder(t, func(n int) (int, string) {
		if n <= 2 {
			return http.StatusInternalServerError, "boom"
		}
		return http.StatusTooManyRequests, ""
	})
	c := NewClient(fastRetry, nil)
	_, err := c.PostJSON(context.Background(), srv.URL+"/secret-token-path", []byte("{}"), nil)
	if len(srv.reqs) != 1+fastRetry.Max || err == nil || strings.Contains(err.Error(), "secret-token-path") {
		t.Errorf("%d requests, err %v", len(srv.reqs), err)
	}
	bad := newRecorder(t, func(int) (int, string) { return http.StatusBadRequest, "invalid payload" })
	if _, err := c.PostJSON(context.Background(), bad.URL, []byte("{}"), nil); len(bad.reqs) != 1 || err == nil || !strings.Contains(err.Error(), "answered 400: invalid payload") {
		t.Errorf("%d requests, err %v", len(bad.reqs), err)
	}
	// A refused connection is retried and its error carries no URL.
	_, err = c.PostJSON(context.Background(), "http://127.0.0.1:1/hooks/secret", []byte("{}"), nil)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("connection error %v", err)
	}
}

// TestSlackPayloadKeys: the Slack payload has exactly Flux's keys at each
// level (no blocks, replace_original or delete_original), and `fields`
// is present, empty, when the event has no metadata.
func TestSlackPayloadKeys(t *testing.T) {
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for _, md := range []map[string]string{{"revision": "main@sha1:" + sha}, nil} {
		b, err := json.Marshal(SlackMessage(testEvent("error", "BuildFailed", md), "", ""))
		if err != nil {
			t.Fatal(err)
		}
		var msg map[string]any
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(msg), []string{"attachments", "channel", "icon_emoji", "icon_url", "username"}; !slices.Equal(got, want) {
			t.Errorf("top-level keys %v, want %v: %s", got, want, b)
		}
		atts, _ := msg["attachments"].([]any)
		if len(atts) != 1 {
			t.Fatalf("attachments %s", b)
		}
		att := atts[0].(map[string]any)
		if got, want := keys(att), []string{"author_name", "color", "fallback", "fields", "mrkdwn_in", "text"}; !slices.Equal(got, want) {
			t.Errorf("attachment keys %v, want %v: %s", got, want, b)
		}
		fields, ok := att["fields"].([]any)
		if !ok || len(fields) != len(md) {
			t.Errorf("fields %v for metadata %v", att["fields"], md)
		}
		for _, f := range fields {
			if got, want := keys(f.(map[string]any)), []string{"short", "title", "value"}; !slices.Equal(got, want) {
				t.Errorf("field keys %v, want %v", got, want)
			}
		}
	}
}

// TestInvalidAddressReason: an address that does not parse is refused with
// the parser's reason, never the address itself (it may carry a token).
func TestInvalidAddressReason(t *testing.T) {
	for _, c := range []struct{ typ, address, want string }{
		{"discord", "https://discord.com:x/api/webhooks/1/s3cret", `discord provider: the address is not a URL: invalid port ":x" after host`},
		{"msteams", "https://acme.webhook.office.com:x/webhookb2/s3cret", `msteams provider: the address is not a URL: invalid port ":x" after host`},
		{"github", "https://github.com:x/acme/s3cret", `the address is not an http(s) repository URL: invalid port ":x" after host`},
		{"gitlab", "ssh://gitlab.com/acme/s3cret", `the address is not an http(s) repository URL: scheme "ssh"`},
		// A password with an unencoded '#' or '/': url.Parse's own reason
		// would quote its first characters (invalid port ":s3" after host).
		{"discord", "https://user:s3#cret@discord.com/api/webhooks/1/x", `discord provider: the address is not a URL: net/url: invalid userinfo`},
		{"github", "https://user:s3/cret@github.com/acme/app", `the address is not an http(s) repository URL: net/url: invalid userinfo`},
		{"msteams", "https://s3cret@acme.webhook.office.com:x/webhookb2/y", `msteams provider: the address is not a URL: invalid port ":x" after host`},
	} {
		_, err := New(Options{Type: c.typ, Address: c.address, Token: "t"})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), `":s3`) {
			t.Errorf("%s %s: %v, want %q", c.typ, c.address, err, c.want)
		}
	}
}

// TestMastodon: a status is POSTed to <instance>/api/v1/statuses with the
// bearer token and {"status": text}; the text names the object, carries
// the message and the metadata and is cut to 500 characters. Without a
// token the provider is refused with a message naming the key.
func TestMastodon(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return 200, `{"id":"1"}` })
	ev := testEvent("info", "ReconciliationSucceeded", map[string]string{"revision": "main@sha1:" + sha})
	m := newNotifier(t, Options{Type: "mastodon", Address: srv.URL + "/", Token: "tok-123"})
	if err := m.Post(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	r := srv.reqs[0]
	if r.URL.Path != "/api/v1/statuses" || r.Header.Get("Authorization") != "Bearer tok-123" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s, headers %v", r.Method, r.URL.Path, r.Header)
	}
	var body map[string]string
	if err := json.Unmarshal(srv.bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	want := "kustomization/apps.flux-system\nReconciliation finished in 1.2s, next run in 10m0s\nsecond line\n\nrevision: main@sha1:" + sha
	if len(body) != 1 || body["status"] != want {
		t.Errorf("body %q, want status %q", srv.bodies[0], want)
	}
	long := testEvent("error", "BuildFailed", nil)
	long.Message = strings.Repeat("é", 600)
	if got := MastodonStatus(long); len([]rune(got)) != MastodonMaxChars {
		t.Errorf("status of %d characters, want %d", len([]rune(got)), MastodonMaxChars)
	}
	if _, err := New(Options{Type: "mastodon", Address: srv.URL}); err == nil || err.Error() != "mastodon provider: the secret has no token key" {
		t.Errorf("no token: %v", err)
	}
}
