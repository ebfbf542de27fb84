package controller

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typeCase is one chat or alerting Provider type as a user sets it up:
// its Secret's keys (the address is the sink's URL plus addressPath), its
// channel, and what the sink must receive.
type typeCase struct {
	typ, addressPath, channel string
	secret                    map[string]string
	// path of the request, and one header it must carry.
	path, header, value string
	// body holds this.
	body string
	// list is the path of the read the sink must get first, when set.
	list string
	// commitStatusExpr is the Provider's spec.commitStatusExpr.
	commitStatusExpr string
}

func typeCases() []typeCase {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bot@example.org:api-key"))
	return []typeCase{
		{typ: "rocket", addressPath: "/hooks/a/b", path: "/hooks/a/b", header: "Content-Type", value: "application/json", body: `"author_name":"kustomization/apps.`},
		{typ: "googlechat", addressPath: "/v1/spaces/S/messages", path: "/v1/spaces/S/messages", header: "Content-Type", value: "application/json", body: `"cards":[{"header":{"title":"kustomization/apps.`},
		{typ: "webex", addressPath: "/v1/messages", channel: "room-1", secret: map[string]string{"token": "wbx"}, path: "/v1/messages", header: "Authorization", value: "Bearer wbx", body: `"roomId":"room-1"`},
		{typ: "telegram", channel: "@flux", secret: map[string]string{"token": "123:tg"}, path: "/bot123:tg/sendMessage", header: "Content-Type", value: "application/json", body: `"chat_id":"@flux"`},
		{typ: "lark", addressPath: "/open-apis/bot/v2/hook/x", path: "/open-apis/bot/v2/hook/x", header: "Content-Type", value: "application/json", body: `"msg_type":"interactive"`},
		{typ: "matrix", channel: "!r:example.org", secret: map[string]string{"token": "mx"}, path: "/_matrix/client/r0/rooms/!r:example.org/send/m.room.message/", header: "Authorization", value: "Bearer mx", body: `"msgtype":"m.text"`},
		{typ: "zulip", channel: "ops/flux", secret: map[string]string{"username": "bot@example.org", "password": "api-key"}, path: "/api/v1/messages", header: "Authorization", value: basic, body: "type=stream"},
		{typ: "opsgenie", addressPath: "/v2/alerts", secret: map[string]string{"token": "og"}, path: "/v2/alerts", header: "Authorization", value: "GenieKey og", body: `"message":"Kustomization/apps"`},
		{typ: "alertmanager", addressPath: "/api/v2/alerts", secret: map[string]string{"token": "am"}, path: "/api/v2/alerts", header: "Authorization", value: "Bearer am", body: `"status":"firing"`},
		{typ: "grafana", addressPath: "/api/annotations", secret: map[string]string{"username": "bot@example.org", "password": "api-key"}, path: "/api/annotations", header: "Authorization", value: basic, body: `"tags":["flux","kustomize-controller"`},
		{typ: "pagerduty", channel: "rk", path: "/v2/enqueue", header: "Content-Type", value: "application/json", body: `"event_action":"trigger"`},
		{typ: "datadog", secret: map[string]string{"token": "dd"}, path: "/api/v1/events", header: "DD-API-KEY", value: "dd", body: `"source_type_name":"fluxcd"`},
		{typ: "zoom", addressPath: "/chat/webhooks/incomingwebhook/x", secret: map[string]string{"token": "zm"}, path: "/chat/webhooks/incomingwebhook/x", header: "Authorization", value: "zm", body: `"sub_head":{"text":"error"}`},
		{typ: "sentry", addressPath: "/1", secret: map[string]string{"dsnKey": "pk"}, path: "/api/1/envelope/", header: "X-Sentry-Auth",
			value: "Sentry sentry_version=7, sentry_client=eddy.notification-controller/1, sentry_key=pk", body: `"level":"error"`},
		{typ: "otel", secret: map[string]string{"token": "ot", "headers": "X-Scope-OrgID: platform\n"}, path: "/v1/traces", header: "Authorization",
			value: "Bearer ot", body: `"name":"Kustomization: `},
		{typ: "incident.io", addressPath: "/v2/alert_events/http/c", secret: map[string]string{"token": "io"}, path: "/v2/alert_events/http/c", header: "Authorization", value: "Bearer io", body: `"status":"firing"`},
	}
}

// TestBinaryDeliversChatAndAlertingTypes: the built binary delivers one
// error event to a Provider of each chat and alerting type, each set up
// with its Secret and channel and addressed to its own local sink, which
// gets the type's request: path, auth header and payload.
func TestBinaryDeliversChatAndAlertingTypes(t *testing.T) {
	deliverToTypes(t, "types", typeCases())
}

// deliverToTypes runs the binary on the Providers and Alerts labelled
// shard, one per case, posts error events about a commit until each
// case's sink got a request with a body, and checks that request.
func deliverToTypes(t *testing.T, shardValue string, cases []typeCase) {
	evPort, _ := testenv.FreePort()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+shardValue, fmt.Sprintf("--events-addr=127.0.0.1:%d", evPort), "--receiverAddr=")
	eventsAt := fmt.Sprintf("http://127.0.0.1:%d/", evPort)
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort)); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	shard := func(o client.Object) client.Object { o.SetLabels(map[string]string{shardKey: shardValue}); return o }
	sinks := make([]*sink, len(cases))
	for i, c := range cases {
		sinks[i] = newSink(t, http.StatusOK)
		name := strings.ReplaceAll(c.typ, ".", "-")
		data := map[string]string{"address": sinks[i].URL + c.addressPath}
		for k, v := range c.secret {
			data[k] = v
		}
		if key, ok := data["dsnKey"]; ok { // a Sentry DSN: the key is the URL's user
			data["address"] = strings.Replace(data["address"], "http://", "http://"+key+"@", 1)
		}
		create(t, secret(ns, name, data),
			shard(provider(ns, name, c.typ, name, func(p *notificationv1.Provider) {
				p.Spec.Channel, p.Spec.CommitStatusExpr = c.channel, c.commitStatusExpr
			})),
			shard(alert(ns, name, name, "", ksSource("apps"))))
	}
	// The git types read the current status first, with no body.
	posted := func(r sinkRequest) bool { return len(r.Body) > 0 }
	delivered := func() bool {
		for _, s := range sinks {
			if !slices.ContainsFunc(s.requests(), posted) {
				return false
			}
		}
		return true
	}
	// The binary's cache has the Alerts once an event reaches every sink;
	// each event differs, so none is dropped as a repeat.
	for i := 0; !delivered(); i++ {
		if i == 600 {
			break
		}
		ev := fluxEvent(ns, "Kustomization", "apps", "error", fmt.Sprintf("binaryevent%d", i), map[string]string{
			"kustomize.toolkit.fluxcd.io/revision": "main@sha1:" + commitSHA, "event.toolkit.fluxcd.io/change_request": "42"})
		ev["reason"] = "HealthCheckFailed"
		if code := postEventTo(t, eventsAt, ev); code != http.StatusAccepted {
			t.Fatalf("event answered %d", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			r := sinks[i].waitRequest(t, c.typ+" request", posted)
			if !strings.HasPrefix(r.Path, c.path) || r.Header.Get(c.header) != c.value || !strings.Contains(string(r.Body), c.body) {
				t.Errorf("%s got %s %s=%q %s; want %s %s=%q and %s", c.typ, r.Path, c.header, r.Header.Get(c.header), r.Body, c.path, c.header, c.value, c.body)
			}
			if first := sinks[i].requests()[0]; c.list != "" && (first.Path != c.list || len(first.Body) != 0) {
				t.Errorf("%s: first request %s %s, want the read %s", c.typ, first.Path, first.Body, c.list)
			}
		})
	}
}
