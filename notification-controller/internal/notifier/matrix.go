package notifier

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Matrix sends an m.room.message text event to a room: PUT
// `<homeserver>/_matrix/client/r0/rooms/<room>/send/m.room.message/<txn>`
// with `Authorization: Bearer <token>` and {"body", "msgtype": "m.text"}.
// spec.channel is the room ID (`!abc:example.org`); the transaction ID is
// the SHA-1 of the event's JSON, so a retried event is not posted twice.
// Flux compatible (matrix.go); Eddy escapes the room ID in the path and
// refuses a Provider without token or room up front.
type Matrix struct {
	base        *url.URL
	room, token string
	client      *Client
}

func newMatrix(opts Options) (*Matrix, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	if err := requireChannel(opts, "the room ID"); err != nil {
		return nil, err
	}
	return &Matrix{base: u, room: opts.Channel, token: opts.Token, client: opts.Client}, nil
}

// MatrixBody is the text of ev: the mark and `<kind>/<name>.<namespace>`,
// the message, then `- key: value` per metadata entry.
func MatrixBody(ev *events.Event) string {
	var b strings.Builder
	b.WriteString(severityMark(ev, "💫", "🚨") + " " + objectID(ev) + "\n" + ev.Message + "\n")
	for _, k := range sortedKeys(ev.Metadata) {
		b.WriteString("- " + k + ": " + ev.Metadata[k] + "\n")
	}
	return b.String()
}

// Post sends ev.
func (m *Matrix) Post(ctx context.Context, ev *events.Event) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	sum := sha1.Sum(raw)
	address := strings.TrimSuffix(m.base.String(), "/") + "/_matrix/client/r0/rooms/" + url.PathEscape(m.room) +
		"/send/m.room.message/" + hex.EncodeToString(sum[:])
	body, err := json.Marshal(map[string]string{"body": MatrixBody(ev), "msgtype": "m.text"})
	if err != nil {
		return err
	}
	if _, err := m.client.Send(ctx, Request{Method: http.MethodPut, URL: address, Body: body,
		Headers: map[string]string{"Authorization": "Bearer " + m.token}}); err != nil {
		return fmt.Errorf("matrix: %w", err)
	}
	return nil
}
