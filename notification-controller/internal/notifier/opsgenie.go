package notifier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/eddyops/eddy/pkg/events"
)

// Opsgenie creates an alert with Opsgenie's Alert API: POST to the address
// (https://api.opsgenie.com/v2/alerts) with `Authorization: GenieKey
// <token>`. Flux compatible (opsgenie.go): message `<Kind>/<name>`, the
// event's message as description, the metadata and the severity as
// details, and an alias that deduplicates: the SHA-256 of the Provider's
// UID, the object and the reason, so a repeated event updates one alert.
type Opsgenie struct {
	address, token, providerUID string
	client                      *Client
}

func newOpsgenie(opts Options) (*Opsgenie, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	return &Opsgenie{address: opts.Address, token: opts.Token, providerUID: opts.ProviderUID, client: opts.Client}, nil
}

// OpsgenieAlert is the create-alert body.
type OpsgenieAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias,omitempty"`
	Description string            `json:"description"`
	Details     map[string]string `json:"details"`
}

// OpsgenieMessage is the alert for ev sent by the Provider providerUID.
func OpsgenieMessage(ev *events.Event, providerUID string) *OpsgenieAlert {
	details := map[string]string{}
	for k, v := range ev.Metadata {
		details[k] = v
	}
	details["severity"] = ev.Severity
	o := ev.InvolvedObject
	sum := sha256.Sum256([]byte(providerUID + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name + "/" + ev.Reason))
	return &OpsgenieAlert{Message: o.Kind + "/" + o.Name, Alias: hex.EncodeToString(sum[:]), Description: ev.Message, Details: details}
}

// Post sends ev.
func (g *Opsgenie) Post(ctx context.Context, ev *events.Event) error {
	_, err := postJSON(ctx, g.client, "opsgenie", g.address, OpsgenieMessage(ev, g.providerUID), map[string]string{"Authorization": "GenieKey " + g.token})
	return err
}
