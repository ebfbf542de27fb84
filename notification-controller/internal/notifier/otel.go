package notifier

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/eddyops/eddy/pkg/events"
)

// OTEL exports each event as one span over OTLP/HTTP, JSON encoded, to the
// address (a collector's traces endpoint; `/v1/traces` when the address
// has no path). Flux compatible (otel.go) in what the span says: the
// trace ID is the first 16 bytes of SHA-256(`<Alert UID>:<revision>`), so
// the events of one revision through one Alert share a trace; the span is
// `<Kind>: <namespace>/<name>` at the event's time, with attributes
// object.uid, object.kind, object.name, object.namespace and the metadata,
// status Error (with the message) or Ok; the resource is the Alert
// (service.name `<namespace>/<name>`); HelmRepository events are skipped.
// Flux exports protobuf in the background and never reports a failure;
// Eddy posts JSON (an encoding OTLP/HTTP collectors accept) and reports
// it. Authorization, unless the secret's headers set it: basic with
// username and password, else bearer with the token (or the password).
type OTEL struct {
	address string
	headers map[string]string
	client  *Client
}

func newOTEL(opts Options) (*OTEL, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	headers := map[string]string{}
	for k, v := range opts.Headers {
		headers[k] = v
	}
	token := opts.Token
	if token == "" {
		token = opts.Password
	}
	if headers["Authorization"] == "" {
		switch {
		case opts.Username != "" && opts.Password != "":
			headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(opts.Username+":"+opts.Password))
		case opts.Username == "" && token != "":
			headers["Authorization"] = "Bearer " + token
		}
	}
	return &OTEL{address: u.String(), headers: headers, client: opts.Client}, nil
}

// AlertRef is the Alert an event is delivered for.
type AlertRef struct{ Namespace, Name, UID string }

type alertKey struct{}

// WithAlert returns ctx carrying the Alert that a delivery is for.
func WithAlert(ctx context.Context, a AlertRef) context.Context {
	return context.WithValue(ctx, alertKey{}, a)
}

// otelRevision is what ties the spans of one change: the OCI app version
// and digest, else the revision, else "unknown".
func otelRevision(md map[string]string) string {
	if d, ok := md["oci-digest"]; ok {
		if v, ok := md["app-version"]; ok {
			return v + "@" + d
		}
	}
	if r, ok := md["revision"]; ok {
		return r
	}
	return "unknown"
}

func otelString(k, v string) map[string]any {
	return map[string]any{"key": k, "value": map[string]string{"stringValue": v}}
}

// OTELTraces is the OTLP ExportTraceServiceRequest, JSON encoded, of ev
// delivered for Alert a.
func OTELTraces(ev *events.Event, a AlertRef) map[string]any {
	sum := sha256.Sum256([]byte(a.UID + ":" + otelRevision(ev.Metadata)))
	span := make([]byte, 8)
	_, _ = rand.Read(span)
	o := ev.InvolvedObject
	attrs := []map[string]any{otelString("object.uid", string(o.UID)), otelString("object.kind", o.Kind),
		otelString("object.name", o.Name), otelString("object.namespace", o.Namespace)}
	for _, k := range sortedKeys(ev.Metadata) {
		attrs = append(attrs, otelString(k, ev.Metadata[k]))
	}
	status := map[string]any{"code": 1} // STATUS_CODE_OK
	if ev.Severity == events.SeverityError {
		status = map[string]any{"code": 2, "message": ev.Message} // STATUS_CODE_ERROR
	}
	return map[string]any{"resourceSpans": []map[string]any{{
		"resource": map[string]any{"attributes": []map[string]any{otelString("service.name", a.Namespace+"/"+a.Name),
			otelString("service.namespace", a.Namespace), otelString("service.instance.id", a.UID)}},
		"scopeSpans": []map[string]any{{
			"scope": map[string]string{"name": "flux:notification-controller"},
			"spans": []map[string]any{{
				"traceId": hex.EncodeToString(sum[:16]), "spanId": hex.EncodeToString(span),
				"name": o.Kind + ": " + o.Namespace + "/" + o.Name, "kind": 1, // SPAN_KIND_INTERNAL
				"startTimeUnixNano": strconv.FormatInt(ev.Timestamp.UnixNano(), 10),
				"endTimeUnixNano":   strconv.FormatInt(time.Now().UnixNano(), 10),
				"attributes":        attrs, "status": status,
			}},
		}},
	}}}
}

// Post sends ev; without the Alert in ctx (WithAlert) it fails, as Flux.
func (t *OTEL) Post(ctx context.Context, ev *events.Event) error {
	a, ok := ctx.Value(alertKey{}).(AlertRef)
	if !ok {
		return fmt.Errorf("otel: the alert is not known")
	}
	if ev.InvolvedObject.Kind == "HelmRepository" {
		return nil
	}
	_, err := postJSON(ctx, t.client, "otel", t.address, OTELTraces(ev, a), t.headers)
	return err
}
