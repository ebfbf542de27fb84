// Package notifier delivers Flux events to external services. Each provider
// type of a Provider object is one Notifier, in its own file; New picks it.
//
// Flux compatible: the payloads of notification-controller's
// internal/notifier (contract §6.3). Errors never carry secret values: no
// webhook URL, token or header value appears in an error message.
package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
)

// Notifier sends one event to one destination. Post returns when the
// destination accepted the event, or with an error after the retries of
// the HTTP client are spent or ctx ends.
type Notifier interface {
	Post(ctx context.Context, ev *events.Event) error
}

// Options are a Provider's settings after its secrets are resolved.
type Options struct {
	// Type is spec.type, e.g. "slack".
	Type string
	// Address is the secret's `address`, else spec.address.
	Address string
	// Token is the secret's `token`.
	Token string
	// Headers are the secret's `headers` (generic, generic-hmac).
	Headers map[string]string
	// Channel is spec.channel. Username is spec.username, else the
	// secret's `username` key, which overrides it as in Flux.
	Channel, Username string
	// Password is the secret's `password` key (basic authentication).
	Password string
	// Creds and NKey are the secret's `creds` (a NATS user credentials
	// file) and `nkey` (an NKey seed) keys, for nats.
	Creds, NKey []byte
	// ProviderUID is the Provider's UID: its first segment ends the default
	// commit status id of git providers.
	ProviderUID string
	// Client sends the requests: proxy, TLS and retries.
	Client *Client
}

// ErrUnsupported is returned by New for provider types Eddy does not implement.
var ErrUnsupported = errors.New("provider type not supported by Eddy")

// New returns the Notifier of opts.Type. Errors name the field at fault,
// never its value.
func New(opts Options) (Notifier, error) {
	if !Supported(opts.Type) {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, opts.Type)
	}
	if opts.Client == nil {
		opts.Client = NewClient(DefaultRetry, nil)
	}
	if f, ok := httpNotifiers[opts.Type]; ok {
		return f(opts)
	}
	switch opts.Type {
	case notificationv1.SlackProvider:
		return newSlack(opts)
	case notificationv1.DiscordProvider:
		return newDiscord(opts)
	case notificationv1.MSTeamsProvider:
		return newMSTeams(opts)
	case notificationv1.GenericProvider:
		return newGeneric(opts, false)
	case notificationv1.GenericHMACProvider:
		return newGeneric(opts, true)
	case notificationv1.GitHubProvider:
		return newGitHub(opts)
	case notificationv1.GitLabProvider:
		return newGitLab(opts)
	case notificationv1.MastodonProvider:
		return newMastodon(opts)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupported, opts.Type)
}

// Supported reports whether New implements provider type t.
func Supported(t string) bool {
	switch t {
	case notificationv1.SlackProvider, notificationv1.DiscordProvider, notificationv1.MSTeamsProvider,
		notificationv1.GenericProvider, notificationv1.GenericHMACProvider,
		notificationv1.GitHubProvider, notificationv1.GitLabProvider, notificationv1.MastodonProvider:
		return true
	}
	_, ok := httpNotifiers[t]
	return ok
}

// IsGit reports whether t is a commit-status provider. Flux compatible: such
// providers only receive commit-status updates, events carrying
// `event.toolkit.fluxcd.io/commit`, and errors.
func IsGit(t string) bool {
	switch t {
	case notificationv1.GitHubProvider, notificationv1.GitLabProvider, notificationv1.GiteaProvider,
		notificationv1.BitbucketServerProvider, notificationv1.BitbucketProvider, notificationv1.AzureDevOpsProvider:
		return true
	}
	return false
}

// IsGeneric reports whether t forwards the event JSON as is.
func IsGeneric(t string) bool {
	return t == notificationv1.GenericProvider || t == notificationv1.GenericHMACProvider
}

// objectID is `<kind lowercased>/<name>.<namespace>`, Flux's author line.
func objectID(ev *events.Event) string {
	return strings.ToLower(ev.InvolvedObject.Kind) + "/" + ev.InvolvedObject.Name + "." + ev.InvolvedObject.Namespace
}

// sortedKeys returns m's keys in order, so payloads are deterministic.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// webhookAddress checks a chat provider's address: set, and a URL with a
// host; errors say why without the address.
func webhookAddress(opts Options) (*url.URL, error) {
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	u, err := redact.ParseURL(opts.Address)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s provider: the address is not a URL%s", opts.Type, urlReason(err))
	}
	return u, nil
}

// gitAddress checks a commit-status provider's options: a token, and an
// address that is an http(s) repository URL, split as repoAddress does.
func gitAddress(opts Options) (base *url.URL, project string, err error) {
	if err := requireAddress(opts); err != nil {
		return nil, "", err
	}
	if opts.Token == "" {
		return nil, "", fmt.Errorf("%s provider: the secret has no token key", opts.Type)
	}
	if base, project, err = repoAddress(opts.Address); err != nil {
		return nil, "", fmt.Errorf("%s provider: %w", opts.Type, err)
	}
	return base, project, nil
}

func requireAddress(opts Options) error {
	if opts.Address == "" {
		return fmt.Errorf("%s provider: no address (spec.address or the secret's address key)", opts.Type)
	}
	return nil
}

// urlReason is ": <why>" for an address that url.Parse refused (err) or that
// has no host (err nil), without the address itself: it may carry a token.
func urlReason(err error) string {
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return ": " + ue.Err.Error()
	case err != nil:
		return ": " + err.Error()
	}
	return ": no host"
}
