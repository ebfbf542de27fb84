package notifier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/events"
)

// Sentry sends each event to a Sentry project through its envelope
// endpoint, addressed by a DSN (the address, normally in the secret:
// `https://<public key>@<host>[/<path>]/<project id>`). Flux compatible
// (sentry.go, through sentry-go): an error becomes a Sentry event (level
// error, server_name the reporting controller, transaction
// `<Kind>: <namespace>/<name>`, the metadata as the `metadata` context);
// an info event a transaction with one span tagged with the object, the
// reason and the metadata. spec.channel is the environment. Flux's Sentry
// client sends in the background and never reports a failed delivery;
// Eddy reports it as for any other type.
type Sentry struct {
	endpoint, auth, environment string
	client                      *Client
}

// sentryClient names Eddy in X-Sentry-Auth and the event's sdk.
const sentryClient = "eddy.notification-controller/1"

func newSentry(opts Options) (*Sentry, error) {
	if err := requireAddress(opts); err != nil {
		return nil, errors.New("sentry provider: no DSN (the secret's address key or spec.address)")
	}
	u, err := url.Parse(opts.Address)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, errors.New("sentry provider: the DSN is not an http(s) URL")
	case u.User == nil || u.User.Username() == "":
		return nil, errors.New("sentry provider: the DSN has no public key (https://<key>@<host>/<project>)")
	}
	prefix, project := "", strings.Trim(u.Path, "/")
	if i := strings.LastIndex(project, "/"); i >= 0 {
		prefix, project = "/"+project[:i], project[i+1:]
	}
	if project == "" {
		return nil, errors.New("sentry provider: the DSN has no project ID (https://<key>@<host>/<project>)")
	}
	auth := "Sentry sentry_version=7, sentry_client=" + sentryClient + ", sentry_key=" + u.User.Username()
	if secret, ok := u.User.Password(); ok && secret != "" {
		auth += ", sentry_secret=" + secret
	}
	endpoint := u.Scheme + "://" + u.Host + prefix + "/api/" + url.PathEscape(project) + "/envelope/"
	return &Sentry{endpoint: endpoint, auth: auth, environment: opts.Channel, client: opts.Client}, nil
}

// sentryID is a random hex ID of n bytes (16 for events and traces, 8 for
// spans).
func sentryID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SentryEvent is the event (or transaction) of ev, with environment env.
func SentryEvent(ev *events.Event, env string) map[string]any {
	o := ev.InvolvedObject
	at := ev.Timestamp.UTC().Format(time.RFC3339Nano)
	e := map[string]any{
		"event_id": sentryID(16), "timestamp": at, "platform": "go", "message": ev.Message,
		"transaction": o.Kind + ": " + o.Namespace + "/" + o.Name,
		"sdk":         map[string]string{"name": "eddy.notification-controller", "version": "1"},
	}
	if env != "" {
		e["environment"] = env
	}
	if ev.Severity == events.SeverityError {
		md := map[string]any{}
		for k, v := range ev.Metadata {
			md[k] = v
		}
		e["level"], e["server_name"], e["contexts"] = "error", ev.ReportingController, map[string]any{"metadata": md}
		return e
	}
	tags := map[string]string{
		"flux_involved_object_kind": o.Kind, "flux_involved_object_namespace": o.Namespace,
		"flux_involved_object_name": o.Name, "flux_reporting_controller": ev.ReportingController,
		"flux_reporting_instance": ev.ReportingInstance, "flux_reason": ev.Reason,
	}
	for k, v := range ev.Metadata {
		tags[k] = v
	}
	trace, root := sentryID(16), sentryID(8)
	e["type"], e["start_timestamp"], e["tags"] = "transaction", at, tags
	e["contexts"] = map[string]any{"trace": map[string]string{"trace_id": trace, "span_id": root, "op": "event"}}
	e["spans"] = []map[string]any{{"trace_id": trace, "span_id": sentryID(8), "parent_span_id": root, "op": "event",
		"start_timestamp": at, "timestamp": at, "tags": tags}}
	return e
}

// Post sends ev as a one-item envelope.
func (s *Sentry) Post(ctx context.Context, ev *events.Event) error {
	e := SentryEvent(ev, s.environment)
	item, err := json.Marshal(e)
	if err != nil {
		return err
	}
	typ := "event"
	if e["type"] == "transaction" {
		typ = "transaction"
	}
	header, _ := json.Marshal(map[string]string{"event_id": e["event_id"].(string), "sent_at": time.Now().UTC().Format(time.RFC3339Nano)})
	itemHeader, _ := json.Marshal(map[string]any{"type": typ, "length": len(item)})
	body := append(append(append(append(header, '\n'), itemHeader...), '\n'), item...)
	if _, err := s.client.Send(ctx, Request{URL: s.endpoint, Body: body, ContentType: "application/x-sentry-envelope",
		Headers: map[string]string{"X-Sentry-Auth": s.auth}}); err != nil {
		return fmt.Errorf("sentry: %w", err)
	}
	return nil
}
