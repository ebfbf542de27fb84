package notifier

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
)

// CommitMetadataKey carries an explicit commit SHA on an event.
const CommitMetadataKey = "event.toolkit.fluxcd.io/commit"

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Commit returns the commit SHA an event is about. Flux compatible
// (Event.GetRevision): metadata `commit` > `originRevision` > `revision`
// (keys as presented to providers, prefix stripped); a revision
// `<ref>@sha1:<hex>` or `sha1:<hex>` yields `<hex>`.
func Commit(ev *events.Event) (string, error) {
	for _, k := range []string{"commit", "originRevision", "revision"} {
		v, ok := ev.Metadata[k]
		if !ok {
			continue
		}
		if i := strings.LastIndex(v, "@"); i >= 0 {
			v = v[i+1:]
		}
		if _, h, ok := strings.Cut(v, ":"); ok {
			v = h
		}
		if !shaRE.MatchString(v) {
			return "", fmt.Errorf("metadata %s is not a Git commit revision", k)
		}
		return v, nil
	}
	return "", fmt.Errorf("the event has no revision metadata")
}

// repoAddress splits a repository URL `https://host[/prefix]/owner/repo[.git]`
// into its scheme+host and the project path.
func repoAddress(address string) (base *url.URL, project string, err error) {
	u, err := redact.ParseURL(address)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("the address is not an http(s) repository URL%s", urlReason(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("the address is not an http(s) repository URL: scheme %q", u.Scheme)
	}
	project = strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	if strings.Count(project, "/") < 1 {
		return nil, "", fmt.Errorf("the address has no owner/repository path")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, project, nil
}

type commitStatusKey struct{}

// WithCommitStatus returns ctx carrying the commit status id of one
// delivery, the result of the Provider's spec.commitStatusExpr, which the
// git types use instead of the default one.
func WithCommitStatus(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, commitStatusKey{}, id)
}

// statusID is the commit status context: the one ctx carries (see
// WithCommitStatus), else `<kind>/<name>/<first segment of the Provider's
// UID>`, lowercased. Flux compatible.
func statusID(ctx context.Context, ev *events.Event, providerUID string) string {
	if id, ok := ctx.Value(commitStatusKey{}).(string); ok && id != "" {
		return id
	}
	uid, _, _ := strings.Cut(providerUID, "-")
	return strings.ToLower(ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name + "/" + uid)
}

// statusDescription is the event reason split into words, as Flux does:
// "ReconciliationSucceeded" ⇒ "reconciliation succeeded".
func statusDescription(ev *events.Event) string {
	var b strings.Builder
	for i, r := range ev.Reason {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
