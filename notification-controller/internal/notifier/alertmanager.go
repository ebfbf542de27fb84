package notifier

import (
	"context"
	"encoding/base64"
	"strings"
	"time"
	"unicode"

	"github.com/eddyops/eddy/pkg/events"
)

// Alertmanager posts one firing alert to Prometheus Alertmanager's API
// (the address, e.g. https://am.example.com/api/v2/alerts). Flux
// compatible (alertmanager.go): labels are the metadata (but `summary`)
// plus alertname `Flux<Kind><Reason title-cased>`, severity, reason, kind,
// name, namespace and reportingcontroller; annotations the message and
// the metadata's summary; startsAt the event time; no endsAt, so the
// alert resolves after Alertmanager's resolve_timeout. Authentication:
// basic with the secret's username and password, else a bearer token.
type Alertmanager struct {
	address string
	auth    string
	client  *Client
}

func newAlertmanager(opts Options) (*Alertmanager, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	return &Alertmanager{address: opts.Address, auth: authorization(opts), client: opts.Client}, nil
}

// authorization is the Authorization header of Flux's alertmanager and
// grafana types: basic with username and password, else bearer with the
// token, else none.
func authorization(opts Options) string {
	switch {
	case opts.Username != "" && opts.Password != "":
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(opts.Username+":"+opts.Password))
	case opts.Token != "":
		return "Bearer " + opts.Token
	}
	return ""
}

// AlertmanagerAlert is one alert of the posted list.
type AlertmanagerAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    string            `json:"startsAt"`
}

// AlertmanagerMessage is the payload for ev.
func AlertmanagerMessage(ev *events.Event) []AlertmanagerAlert {
	labels := map[string]string{}
	annotations := map[string]string{"message": ev.Message}
	for k, v := range ev.Metadata {
		if k == "summary" {
			annotations["summary"] = v
			continue
		}
		labels[k] = v
	}
	o := ev.InvolvedObject
	labels["alertname"] = "Flux" + o.Kind + titleWords(ev.Reason)
	labels["severity"] = ev.Severity
	labels["reason"] = ev.Reason
	labels["kind"] = o.Kind
	labels["name"] = o.Name
	labels["namespace"] = o.Namespace
	labels["reportingcontroller"] = ev.ReportingController
	return []AlertmanagerAlert{{Status: "firing", Labels: labels, Annotations: annotations,
		StartsAt: ev.Timestamp.UTC().Format(time.RFC3339)}}
}

// titleWords capitalises the first letter of each word and lowers the
// rest, as Flux's title casing does: "ReconciliationSucceeded" ⇒
// "Reconciliationsucceeded".
func titleWords(s string) string {
	var b strings.Builder
	start := true
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			start = true
		case start:
			r, start = unicode.ToTitle(r), false
		default:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Post sends ev.
func (a *Alertmanager) Post(ctx context.Context, ev *events.Event) error {
	var headers map[string]string
	if a.auth != "" {
		headers = map[string]string{"Authorization": a.auth}
	}
	_, err := postJSON(ctx, a.client, "alertmanager", a.address, AlertmanagerMessage(ev), headers)
	return err
}
