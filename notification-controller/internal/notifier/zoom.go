package notifier

import (
	"context"

	"github.com/eddyops/eddy/pkg/events"
)

// Zoom posts a rich message to a Zoom Team Chat incoming webhook: the
// address with `format=full` added unless it has a format, and the
// connection's verification token, the secret's `token`, as the whole
// Authorization header. Flux compatible (zoom.go): head
// `<kind>/<name>.<namespace>` with the severity as sub head, a message
// item, and a fields item with the metadata.
type Zoom struct {
	address, token string
	client         *Client
}

func newZoom(opts Options) (*Zoom, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	if q := u.Query(); q.Get("format") == "" {
		q.Set("format", "full")
		u.RawQuery = q.Encode()
	}
	return &Zoom{address: u.String(), token: opts.Token, client: opts.Client}, nil
}

// ZoomMessage is the payload for ev.
func ZoomMessage(ev *events.Event) map[string]any {
	body := []map[string]any{{"type": "message", "text": ev.Message}}
	if len(ev.Metadata) > 0 {
		var items []map[string]string
		for _, k := range sortedKeys(ev.Metadata) {
			items = append(items, map[string]string{"key": k, "value": ev.Metadata[k]})
		}
		body = append(body, map[string]any{"type": "fields", "items": items})
	}
	return map[string]any{"content": map[string]any{
		"head": map[string]any{"text": objectID(ev), "sub_head": map[string]string{"text": ev.Severity}},
		"body": body,
	}}
}

// Post sends ev.
func (z *Zoom) Post(ctx context.Context, ev *events.Event) error {
	_, err := postJSON(ctx, z.client, "zoom", z.address, ZoomMessage(ev), map[string]string{"Authorization": z.token})
	return err
}
