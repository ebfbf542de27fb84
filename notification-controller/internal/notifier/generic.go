package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/webhook"
)

// Generic POSTs the event JSON with header `gotk-component:
// <reportingController>` plus the secret's headers; with hmac (type
// generic-hmac) it adds `X-Signature: sha256=<hex HMAC-SHA256(body, token)>`.
// Flux compatible (forwarder.go).
type Generic struct {
	address, token string
	headers        map[string]string
	hmac           bool
	client         *Client
}

func newGeneric(opts Options, withHMAC bool) (*Generic, error) {
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	if withHMAC && opts.Token == "" {
		return nil, fmt.Errorf("generic-hmac provider: the secret has no token key")
	}
	return &Generic{address: opts.Address, token: opts.Token, headers: opts.Headers, hmac: withHMAC, client: opts.Client}, nil
}

// Post sends ev.
func (g *Generic) Post(ctx context.Context, ev *events.Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	headers := map[string]string{}
	for k, v := range g.headers {
		headers[k] = v
	}
	headers["gotk-component"] = ev.ReportingController
	if g.hmac {
		headers["X-Signature"] = webhook.GitHubSignature(body, g.token)
	}
	if _, err := g.client.PostJSON(ctx, g.address, body, headers); err != nil {
		return fmt.Errorf("generic: %w", err)
	}
	return nil
}
