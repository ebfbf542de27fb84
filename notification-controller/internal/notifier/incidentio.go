package notifier

import (
	"context"

	"github.com/eddyops/eddy/pkg/events"
)

// Incidentio posts an alert event to an incident.io HTTP alert source (the
// address, https://api.incident.io/v2/alert_events/http/<config id>) with
// `Authorization: Bearer <token>`. Flux compatible (incidentio.go): an
// error fires, any other event resolves; the object's UID is the
// deduplication key; `Progressing` events are skipped; the metadata plus
// severity, reason and reportingController go in metadata.
type Incidentio struct {
	address, token string
	client         *Client
}

func newIncidentio(opts Options) (*Incidentio, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	return &Incidentio{address: opts.Address, token: opts.Token, client: opts.Client}, nil
}

// IncidentioEvent is the alert event body.
type IncidentioEvent struct {
	Title            string            `json:"title"`
	Status           string            `json:"status"`
	DeduplicationKey string            `json:"deduplication_key"`
	Description      string            `json:"description,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
}

// IncidentioMessage is the alert event for ev.
func IncidentioMessage(ev *events.Event) *IncidentioEvent {
	md := map[string]string{}
	for k, v := range ev.Metadata {
		md[k] = v
	}
	md["severity"], md["reason"] = ev.Severity, ev.Reason
	if ev.ReportingController != "" {
		md["reportingController"] = ev.ReportingController
	}
	return &IncidentioEvent{
		Title: objectID(ev) + ": " + ev.Reason, Status: severityMark(ev, "resolved", "firing"),
		DeduplicationKey: string(ev.InvolvedObject.UID), Description: ev.Message, Metadata: md,
	}
}

// Post sends ev.
func (i *Incidentio) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == "Progressing" {
		return nil
	}
	_, err := postJSON(ctx, i.client, "incident.io", i.address, IncidentioMessage(ev), map[string]string{"Authorization": "Bearer " + i.token})
	return err
}
