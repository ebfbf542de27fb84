package notifier

import (
	"context"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// DataDog posts an event with Datadog's Events API v1: POST
// `<scheme>://<host>/api/v1/events` of the address (the site, e.g.
// https://api.datadoghq.eu) with `DD-API-KEY: <token>` (an API key, not an
// application key). Flux compatible (datadog.go): title `Events from the
// <Kind> <name>/<namespace>`, the message as text, source_type_name
// fluxcd, alert_type error or info, and lowercased tags
// flux_reporting_controller, flux_reason, kube_kind, kube_name,
// kube_namespace plus one `key:value` per metadata entry.
type DataDog struct {
	address, token string
	client         *Client
}

func newDataDog(opts Options) (*DataDog, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	return &DataDog{address: u.Scheme + "://" + u.Host + "/api/v1/events", token: opts.Token, client: opts.Client}, nil
}

// DataDogEvent is the create-event body.
type DataDogEvent struct {
	Title          string   `json:"title"`
	Text           string   `json:"text"`
	Tags           []string `json:"tags"`
	SourceTypeName string   `json:"source_type_name"`
	DateHappened   int64    `json:"date_happened"`
	AlertType      string   `json:"alert_type"`
}

// DataDogMessage is the event for ev.
func DataDogMessage(ev *events.Event) *DataDogEvent {
	o := ev.InvolvedObject
	tags := []string{
		"flux_reporting_controller:" + ev.ReportingController, "flux_reason:" + ev.Reason,
		"kube_kind:" + o.Kind, "kube_name:" + o.Name, "kube_namespace:" + o.Namespace,
	}
	for _, k := range sortedKeys(ev.Metadata) {
		tags = append(tags, k+":"+ev.Metadata[k])
	}
	for i := range tags {
		tags[i] = strings.ToLower(tags[i])
	}
	return &DataDogEvent{
		Title: "Events from the " + o.Kind + " " + o.Name + "/" + o.Namespace, Text: ev.Message, Tags: tags,
		SourceTypeName: "fluxcd", DateHappened: ev.Timestamp.Unix(), AlertType: severityMark(ev, "info", "error"),
	}
}

// Post sends ev.
func (d *DataDog) Post(ctx context.Context, ev *events.Event) error {
	_, err := postJSON(ctx, d.client, "datadog", d.address, DataDogMessage(ev),
		map[string]string{"DD-API-KEY": d.token, "Accept": "application/json"})
	return err
}
