package notifier

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/events"
)

// PagerDuty sends to PagerDuty's Events API v2 at the address's scheme and
// host (https://events.pagerduty.com; a path is ignored), with
// spec.channel as the routing (integration) key. Flux compatible
// (pagerduty.go): an error triggers an incident, any other event resolves
// the object's incident (dedup key: the object's UID) and is also sent as
// a change event; `Progressing` events are skipped.
type PagerDuty struct {
	endpoint, routingKey string
	client               *Client
}

func newPagerDuty(opts Options) (*PagerDuty, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if err := requireChannel(opts, "the integration key"); err != nil {
		return nil, err
	}
	return &PagerDuty{endpoint: u.Scheme + "://" + u.Host, routingKey: opts.Channel, client: opts.Client}, nil
}

// PagerDutyEvent is an alert event of the Events API v2 (/v2/enqueue).
type PagerDutyEvent struct {
	RoutingKey string            `json:"routing_key"`
	Action     string            `json:"event_action"`
	DedupKey   string            `json:"dedup_key,omitempty"`
	Payload    *PagerDutyPayload `json:"payload,omitempty"`
}

// PagerDutyPayload describes a triggered incident.
type PagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// PagerDutyChange is a change event (/v2/change/enqueue).
type PagerDutyChange struct {
	RoutingKey string                 `json:"routing_key"`
	Payload    PagerDutyChangePayload `json:"payload"`
}

// PagerDutyChangePayload describes the change.
type PagerDutyChangePayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source,omitempty"`
	Timestamp     string         `json:"timestamp"`
	CustomDetails map[string]any `json:"custom_details"`
}

// pagerDutySummary is `<reason in words>: <kind>/<name>`, lowercased.
func pagerDutySummary(ev *events.Event) string {
	return statusDescription(ev) + ": " + strings.ToLower(ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name)
}

// PagerDutyMessage is the alert event for ev: trigger for an error, else
// resolve.
func PagerDutyMessage(ev *events.Event, routingKey string) *PagerDutyEvent {
	e := &PagerDutyEvent{RoutingKey: routingKey, Action: "resolve", DedupKey: string(ev.InvolvedObject.UID)}
	if ev.Severity == events.SeverityError {
		e.Action = "trigger"
		e.Payload = &PagerDutyPayload{
			Summary: pagerDutySummary(ev), Source: "Flux " + ev.ReportingController, Severity: "error",
			Timestamp: ev.Timestamp.UTC().Format(time.RFC3339), Component: ev.InvolvedObject.Name,
			Group: ev.InvolvedObject.Kind, CustomDetails: map[string]any{"message": ev.Message, "metadata": ev.Metadata},
		}
	}
	return e
}

// PagerDutyChangeMessage is the change event for ev.
func PagerDutyChangeMessage(ev *events.Event, routingKey string) *PagerDutyChange {
	return &PagerDutyChange{RoutingKey: routingKey, Payload: PagerDutyChangePayload{
		Summary: pagerDutySummary(ev), Source: "Flux " + ev.ReportingController,
		Timestamp:     ev.Timestamp.UTC().Format(time.RFC3339),
		CustomDetails: map[string]any{"message": ev.Message, "metadata": ev.Metadata},
	}}
}

// Post sends ev.
func (p *PagerDuty) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == "Progressing" {
		return nil
	}
	if _, err := postJSON(ctx, p.client, "pagerduty", p.endpoint+"/v2/enqueue", PagerDutyMessage(ev, p.routingKey), nil); err != nil {
		return err
	}
	if ev.Severity != events.SeverityInfo {
		return nil
	}
	if _, err := postJSON(ctx, p.client, "pagerduty", p.endpoint+"/v2/change/enqueue", PagerDutyChangeMessage(ev, p.routingKey), nil); err != nil {
		return fmt.Errorf("change event: %w", err)
	}
	return nil
}
