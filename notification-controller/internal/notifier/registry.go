package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddyops/eddy/pkg/events"
)

// httpNotifiers are the types not in New's switch (nats, googlepubsub and azureeventhub are not HTTP), each
// in its own file, by spec.type.
var httpNotifiers = map[string]func(Options) (Notifier, error){
	"rocket":        func(o Options) (Notifier, error) { return newRocket(o) },
	"googlechat":    func(o Options) (Notifier, error) { return newGoogleChat(o) },
	"webex":         func(o Options) (Notifier, error) { return newWebex(o) },
	"telegram":      func(o Options) (Notifier, error) { return newTelegram(o) },
	"lark":          func(o Options) (Notifier, error) { return newLark(o) },
	"matrix":        func(o Options) (Notifier, error) { return newMatrix(o) },
	"zulip":         func(o Options) (Notifier, error) { return newZulip(o) },
	"opsgenie":      func(o Options) (Notifier, error) { return newOpsgenie(o) },
	"alertmanager":  func(o Options) (Notifier, error) { return newAlertmanager(o) },
	"grafana":       func(o Options) (Notifier, error) { return newGrafana(o) },
	"pagerduty":     func(o Options) (Notifier, error) { return newPagerDuty(o) },
	"datadog":       func(o Options) (Notifier, error) { return newDataDog(o) },
	"zoom":          func(o Options) (Notifier, error) { return newZoom(o) },
	"incident.io":   func(o Options) (Notifier, error) { return newIncidentio(o) },
	"sentry":        func(o Options) (Notifier, error) { return newSentry(o) },
	"otel":          func(o Options) (Notifier, error) { return newOTEL(o) },
	"nats":          func(o Options) (Notifier, error) { return newNATS(o) },
	"googlepubsub":  func(o Options) (Notifier, error) { return newGooglePubSub(o) },
	"azureeventhub": func(o Options) (Notifier, error) { return newAzureEventHub(o) },
	// Git commit statuses and repository dispatch.
	"gitea":                     func(o Options) (Notifier, error) { return newGitea(o) },
	"bitbucketserver":           func(o Options) (Notifier, error) { return newBitbucketServer(o) },
	"bitbucket":                 func(o Options) (Notifier, error) { return newBitbucket(o) },
	"azuredevops":               func(o Options) (Notifier, error) { return newAzureDevOps(o) },
	"githubdispatch":            func(o Options) (Notifier, error) { return newGitHubDispatch(o) },
	"githubpullrequestcomment":  func(o Options) (Notifier, error) { return newPRComment(o) },
	"giteapullrequestcomment":   func(o Options) (Notifier, error) { return newPRComment(o) },
	"gitlabmergerequestcomment": func(o Options) (Notifier, error) { return newPRComment(o) },
}

// requireToken checks that the secret gave a token.
func requireToken(opts Options) error {
	if opts.Token == "" {
		return fmt.Errorf("%s provider: the secret has no token key", opts.Type)
	}
	return nil
}

// requireChannel checks spec.channel, which holds what (e.g. "the room ID").
func requireChannel(opts Options, what string) error {
	if opts.Channel == "" {
		return fmt.Errorf("%s provider: no channel (spec.channel: %s)", opts.Type, what)
	}
	return nil
}

// postJSON marshals payload and posts it to address with headers; errors
// start with the provider type.
func postJSON(ctx context.Context, c *Client, typ, address string, payload any, headers map[string]string) ([]byte, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	out, err := c.PostJSON(ctx, address, body, headers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	return out, nil
}

// severityMark is one of two marks by the event's severity.
func severityMark(ev *events.Event, info, errMark string) string {
	if ev.Severity == events.SeverityError {
		return errMark
	}
	return info
}
