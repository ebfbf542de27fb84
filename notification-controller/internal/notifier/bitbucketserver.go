package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
)

// BitbucketServer sets a build status through Bitbucket Server's (Data
// Center's) REST API, at `<host>[/context]/rest/api/latest/projects/<project>/repos/<repo>/commits/<sha>/builds`:
// a GET with `?key=<key>` reads the current one, and unless it already has
// the state, name and description, a POST sets it. The address is the HTTP
// clone URL `<host>[/context]/scm/<project>/<repo>.git`. Auth: the secret's
// `token` as a bearer token, else `username` and `password` as basic auth.
// The key is the SHA-1 of the status id; the name is
// `<kind>/<name> [<description>]`, shown by Bitbucket. State: error ⇒
// FAILED, else SUCCESSFUL; Progressing events are skipped. Flux compatible
// (bitbucketserver.go).
type BitbucketServer struct {
	builds, link, token, user, password, uid string
	client                                   *Client
}

type bbsBuildStatus struct {
	Key         string `json:"key"`
	State       string `json:"state"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
}

func newBitbucketServer(opts Options) (*BitbucketServer, error) {
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	if opts.Token == "" && (opts.Username == "" || opts.Password == "") {
		return nil, fmt.Errorf("%s provider: the secret has neither a token key nor username and password keys", opts.Type)
	}
	u, err := redact.ParseURL(opts.Address)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s provider: the address is not an http(s) repository URL%s", opts.Type, urlReason(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s provider: the address is not an http(s) repository URL: scheme %q", opts.Type, u.Scheme)
	}
	p := strings.TrimSuffix(u.Path, ".git")
	i := strings.LastIndex(p, "/scm/")
	if i < 0 {
		return nil, fmt.Errorf("%s provider: the address is not an HTTP clone URL (no /scm/ in its path)", opts.Type)
	}
	parts, err := repoParts(opts.Type, p[i+len("/scm/"):], 2, "<context>/scm/<project>/<repository>")
	if err != nil {
		return nil, err
	}
	// The link shown with the status is the repository, never its userinfo.
	link := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	api := url.URL{Scheme: u.Scheme, Host: u.Host, Path: p[:i] + "/rest/api/latest/projects/" + parts[0] + "/repos/" + parts[1] + "/commits"}
	return &BitbucketServer{builds: api.String(), link: link.String(), token: opts.Token, user: opts.Username,
		password: opts.Password, uid: opts.ProviderUID, client: opts.Client}, nil
}

// Post sends ev.
func (b *BitbucketServer) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == progressingReason {
		return nil
	}
	sha, err := commitOf("bitbucketserver", ev)
	if err != nil {
		return err
	}
	state := "SUCCESSFUL"
	if ev.Severity == events.SeverityError {
		state = "FAILED"
	}
	desc := statusDescription(ev)
	name := strings.ToLower(ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name) + " [" + desc + "]"
	want := bbsBuildStatus{Key: statusKey(statusID(ctx, ev, b.uid)), State: state, Name: name, Description: desc, URL: b.link}
	r := Request{URL: b.builds + "/" + sha + "/builds", Headers: map[string]string{
		"X-Atlassian-Token": "no-check", "X-Requested-With": "XMLHttpRequest"}}
	if b.token != "" {
		r.Headers["Authorization"] = "Bearer " + b.token
	} else {
		r.User, r.Password = b.user, b.password
	}
	get := r
	get.URL += "?key=" + want.Key
	var have bbsBuildStatus
	found, err := getExisting(ctx, b.client, get, &have)
	if err != nil {
		return fmt.Errorf("bitbucketserver: reading the build status: %w", err)
	}
	if found && have.Key == want.Key && have.State == want.State && have.Name == want.Name && have.Description == want.Description {
		return nil
	}
	r.Body, _ = json.Marshal(want)
	if _, err := b.client.Send(ctx, r); err != nil {
		return fmt.Errorf("bitbucketserver: %w", err)
	}
	return nil
}
