package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Lark posts an interactive message card to a Lark (Feishu) custom bot
// webhook. Flux compatible (lark.go): the header is the mark and
// `<kind>/<name>.<namespace>`, template `turquoise` (info) or `red`
// (error); one lark_md element holds the message in bold and a
// `key: value` line per metadata entry. Lark answers HTTP 200 with a
// non-zero `code` when it refuses a message (a bad signature, a removed
// bot): Eddy reports that as an error, Flux does not.
type Lark struct {
	address string
	client  *Client
}

func newLark(opts Options) (*Lark, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	return &Lark{address: opts.Address, client: opts.Client}, nil
}

// LarkMessage is the payload for ev.
func LarkMessage(ev *events.Event) map[string]any {
	var text strings.Builder
	text.WriteString("**" + ev.Message + "**\n\n")
	for _, k := range sortedKeys(ev.Metadata) {
		text.WriteString(k + ": " + ev.Metadata[k] + "\n")
	}
	return map[string]any{
		"msg_type": "interactive",
		"card": map[string]any{
			"config": map[string]bool{"wide_screen_mode": true},
			"header": map[string]any{
				"title":    map[string]string{"tag": "plain_text", "content": severityMark(ev, "💫", "🚨") + " " + objectID(ev)},
				"template": severityMark(ev, "turquoise", "red"),
			},
			"elements": []map[string]any{{"tag": "div", "text": map[string]string{"tag": "lark_md", "content": text.String()}}},
		},
	}
}

// Post sends ev.
func (l *Lark) Post(ctx context.Context, ev *events.Event) error {
	out, err := postJSON(ctx, l.client, "lark", l.address, LarkMessage(ev), nil)
	if err != nil {
		return err
	}
	var ans struct {
		Code *int   `json:"code"`
		Msg  string `json:"msg"`
	}
	if json.Unmarshal(out, &ans) == nil && ans.Code != nil && *ans.Code != 0 {
		return fmt.Errorf("lark: answered code %d: %s", *ans.Code, events.Truncate(ans.Msg, 256))
	}
	return nil
}
