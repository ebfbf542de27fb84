package notifier

import (
	"context"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Grafana adds an annotation with Grafana's HTTP API (the address, e.g.
// https://grafana.example.com/api/annotations). Flux compatible
// (grafana.go): {when: the event time in Unix seconds, text:
// `<kind>/<name>.<namespace>`, tags: flux, the reporting controller, one
// `key: value` per metadata entry (colons in them become `|`), then kind,
// name and namespace}. Authentication as alertmanager: a bearer token
// wins over basic.
type Grafana struct {
	address, auth string
	client        *Client
}

func newGrafana(opts Options) (*Grafana, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	auth := authorization(opts)
	if opts.Token != "" {
		auth = "Bearer " + opts.Token
	}
	return &Grafana{address: opts.Address, auth: auth, client: opts.Client}, nil
}

// GrafanaAnnotation is the annotation body.
type GrafanaAnnotation struct {
	When int64    `json:"when"`
	Text string   `json:"text"`
	Tags []string `json:"tags,omitempty"`
}

// GrafanaMessage is the annotation for ev.
func GrafanaMessage(ev *events.Event) *GrafanaAnnotation {
	tags := []string{"flux", ev.ReportingController}
	for _, k := range sortedKeys(ev.Metadata) {
		tags = append(tags, strings.ReplaceAll(k, ":", "|")+": "+strings.ReplaceAll(ev.Metadata[k], ":", "|"))
	}
	o := ev.InvolvedObject
	tags = append(tags, "kind: "+o.Kind, "name: "+o.Name, "namespace: "+o.Namespace)
	return &GrafanaAnnotation{When: ev.Timestamp.Unix(), Text: objectID(ev), Tags: tags}
}

// Post sends ev.
func (g *Grafana) Post(ctx context.Context, ev *events.Event) error {
	var headers map[string]string
	if g.auth != "" {
		headers = map[string]string{"Authorization": g.auth}
	}
	_, err := postJSON(ctx, g.client, "grafana", g.address, GrafanaMessage(ev), headers)
	return err
}
