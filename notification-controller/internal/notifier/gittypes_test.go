package notifier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// gitCase is one commit-status type against a fake of its service's API:
// the GET that reads what is set, the POST that sets it, and an answer to
// the GET saying the wanted status is already there.
type gitCase struct {
	typ      string
	opts     func(base string) Options
	get      string // path and query of the GET
	post     string // path of the POST
	auth     string // the Authorization header of both
	header   string // the header auth is in, when not Authorization
	want     map[string]any
	existing string
}

func gitCases() []gitCase {
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	id := "kustomization/apps/4e8a9c1d"
	return []gitCase{
		{typ: "github",
			opts: func(b string) Options { return Options{Address: b + "/acme/platform.git", Token: caseToken} },
			get:  "/api/v3/repos/acme/platform/commits/" + sha + "/statuses?per_page=50",
			post: "/api/v3/repos/acme/platform/statuses/" + sha, auth: "Bearer " + caseToken,
			want:     map[string]any{"state": "failure", "context": id, "description": "health check failed"},
			existing: `[{"state":"failure","context":"` + id + `","description":"health check failed"},{"state":"success","context":"` + id + `","description":"x"}]`},
		{typ: "gitlab",
			opts: func(b string) Options { return Options{Address: b + "/group/platform", Token: caseToken} },
			get:  "/api/v4/projects/group%2Fplatform/repository/commits/" + sha + "/statuses?name=kustomization%2Fapps%2F4e8a9c1d",
			post: "/api/v4/projects/group/platform/statuses/" + sha, auth: caseToken, header: "PRIVATE-TOKEN",
			want: map[string]any{"state": "failed", "name": id, "description": "health check failed"},
			existing: `[{"sha":"` + sha + `","status":"success","name":"` + id + `","description":"x"},` +
				`{"sha":"` + sha + `","status":"failed","name":"` + id + `","description":"health check failed"}]`},
		{typ: "gitea",
			opts: func(b string) Options { return Options{Address: b + "/acme/platform.git", Token: caseToken} },
			get:  "/api/v1/repos/acme/platform/commits/" + sha + "/statuses?page=1&limit=50",
			post: "/api/v1/repos/acme/platform/statuses/" + sha, auth: "token " + caseToken,
			want:     map[string]any{"state": "failure", "context": id, "description": "health check failed", "target_url": ""},
			existing: `[{"state":"failure","context":"` + id + `","description":"health check failed"},{"state":"success","context":"` + id + `","description":"x"}]`},
		{typ: "bitbucketserver",
			opts: func(b string) Options {
				return Options{Address: b + "/bb/scm/PRJ/platform.git", Username: "bot", Password: casePassword}
			},
			get:  "/bb/rest/api/latest/projects/PRJ/repos/platform/commits/" + sha + "/builds?key=" + statusKey(id),
			post: "/bb/rest/api/latest/projects/PRJ/repos/platform/commits/" + sha + "/builds", auth: basic("bot", casePassword),
			want: map[string]any{"key": statusKey(id), "state": "FAILED", "name": "kustomization/apps [health check failed]",
				"description": "health check failed", "url": "BASE/bb/scm/PRJ/platform.git"},
			existing: `{"key":"` + statusKey(id) + `","state":"FAILED","name":"kustomization/apps [health check failed]","description":"health check failed"}`},
		{typ: "bitbucket",
			opts: func(b string) Options { return Options{Address: b + "/acme/platform", Token: "bot:" + casePassword} },
			get:  "/2.0/repositories/acme/platform/commit/" + sha + "/statuses/build/" + statusKey(id),
			post: "/2.0/repositories/acme/platform/commit/" + sha + "/statuses/build", auth: basic("bot", casePassword),
			want: map[string]any{"key": statusKey(id), "state": "FAILED", "name": "kustomization/apps",
				"description": "health check failed", "url": "https://bitbucket.org"},
			existing: `{"key":"` + statusKey(id) + `","state":"FAILED","description":"health check failed"}`},
		{typ: "azuredevops",
			opts: func(b string) Options { return Options{Address: b + "/org/proj/_git/platform", Token: caseToken} },
			get:  "/org/proj/_apis/git/repositories/platform/commits/" + sha + "/statuses?api-version=6.0",
			post: "/org/proj/_apis/git/repositories/platform/commits/" + sha + "/statuses", auth: basic("", caseToken),
			want: map[string]any{"state": "error", "description": "health check failed",
				"context": map[string]any{"name": id, "genre": "fluxcd:prod"}},
			existing: `{"count":1,"value":[{"state":"error","description":"health check failed","context":{"name":"` + id + `","genre":"fluxcd:prod"}}]}`},
	}
}

func gitNotifier(t *testing.T, c gitCase, base string) Notifier {
	t.Helper()
	o := c.opts(base)
	o.Type, o.ProviderUID = c.typ, "4e8a9c1d-aaaa-bbbb"
	return newNotifier(t, o)
}

// TestGitTypesSetCommitStatus: each type reads the commit's status, then
// posts the wanted one to its API's path with its auth and payload.
func TestGitTypesSetCommitStatus(t *testing.T) {
	for _, c := range gitCases() {
		t.Run(c.typ, func(t *testing.T) {
			srv := newRecorder(t, func(n int) (int, string) {
				if n == 1 {
					return http.StatusNotFound, `{"message":"not found"}`
				}
				return http.StatusCreated, "{}"
			})
			if err := gitNotifier(t, c, srv.URL).Post(context.Background(), alertEvent("error", "HealthCheckFailed")); err != nil {
				t.Fatal(err)
			}
			if len(srv.reqs) != 2 {
				t.Fatalf("%d requests, want a GET and a POST", len(srv.reqs))
			}
			get, post := srv.reqs[0], srv.reqs[1]
			header := c.header
			if header == "" {
				header = "Authorization"
			}
			if get.Method != http.MethodGet || get.URL.RequestURI() != c.get || get.Header.Get(header) != c.auth {
				t.Errorf("GET: %s %s auth %q", get.Method, get.URL.RequestURI(), get.Header.Get(header))
			}
			if post.Method != http.MethodPost || post.URL.Path != c.post || post.Header.Get(header) != c.auth ||
				post.Header.Get("Content-Type") != "application/json" {
				t.Errorf("POST: %s %s auth %q", post.Method, post.URL.Path, post.Header.Get(header))
			}
			var got map[string]any
			if err := json.Unmarshal(srv.bodies[1], &got); err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(c.want)
			have, _ := json.Marshal(got)
			if string(have) != strings.ReplaceAll(string(want), "BASE", srv.URL) {
				t.Errorf("payload %s, want %s", have, want)
			}
		})
	}
}

// TestGitTypesSkipDuplicateStatus: a status already set with the same
// state and description is not posted again (GitHub, Gitea, Azure DevOps:
// the newest of its context; GitLab: any of its name).
func TestGitTypesSkipDuplicateStatus(t *testing.T) {
	for _, c := range gitCases() {
		t.Run(c.typ, func(t *testing.T) {
			srv := newRecorder(t, func(int) (int, string) { return http.StatusOK, c.existing })
			if err := gitNotifier(t, c, srv.URL).Post(context.Background(), alertEvent("error", "HealthCheckFailed")); err != nil {
				t.Fatal(err)
			}
			if len(srv.reqs) != 1 || srv.reqs[0].Method != http.MethodGet {
				t.Errorf("%d requests, want only the GET", len(srv.reqs))
			}
		})
	}
}

// TestGitTypesProgressing: Gitea marks a Progressing event pending; the
// GitHub, GitLab, Bitbucket and Azure DevOps types send nothing for it.
func TestGitTypesProgressing(t *testing.T) {
	for _, c := range gitCases() {
		t.Run(c.typ, func(t *testing.T) {
			srv := newRecorder(t, func(int) (int, string) { return http.StatusOK, "[]" })
			if err := gitNotifier(t, c, srv.URL).Post(context.Background(), alertEvent("info", "Progressing")); err != nil {
				t.Fatal(err)
			}
			if c.typ != "gitea" {
				if len(srv.reqs) != 0 {
					t.Errorf("%d requests, want none", len(srv.reqs))
				}
				return
			}
			var got map[string]string
			if len(srv.reqs) != 2 || json.Unmarshal(srv.bodies[1], &got) != nil || got["state"] != "pending" {
				t.Errorf("%d requests, status %v", len(srv.reqs), got)
			}
		})
	}
}

// TestGitTypesFailuresNameNoSecret: an answer refused by the API, on the
// read or on the write, is an error saying which call and the code; it
// never holds the token or password.
func TestGitTypesFailuresNameNoSecret(t *testing.T) {
	for _, c := range gitCases() {
		for _, tc := range []struct {
			name   string
			answer func(int) (int, string)
			want   string
		}{
			{"read refused", func(int) (int, string) { return http.StatusUnauthorized, "" }, c.typ + ": " + readCall(c.typ) + ": answered 401"},
			{"write refused", func(n int) (int, string) {
				if n == 1 {
					return http.StatusOK, "[]"
				}
				return http.StatusBadRequest, ""
			}, c.typ + ": answered 400"},
			{"server down", func(int) (int, string) { return http.StatusBadGateway, "" }, "answered 502"},
		} {
			t.Run(c.typ+"/"+tc.name, func(t *testing.T) {
				srv := newRecorder(t, tc.answer)
				err := gitNotifier(t, c, srv.URL).Post(context.Background(), alertEvent("error", "HealthCheckFailed"))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				if strings.Contains(err.Error(), caseToken) || strings.Contains(err.Error(), casePassword) {
					t.Errorf("error holds a secret: %v", err)
				}
			})
		}
	}
}

func readCall(typ string) string {
	if strings.HasPrefix(typ, "bitbucket") {
		return "reading the build status"
	}
	return "listing the commit's statuses"
}

// TestGitTypesRefuseBadOptions: a missing secret key or an address not of
// the type's form is refused when the notifier is made, naming the field
// and never its value.
func TestGitTypesRefuseBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Type: "gitea", Address: "https://gitea.example/acme/app"}, "gitea provider: the secret has no token key"},
		{Options{Type: "gitea", Address: "https://gitea.example/acme/sub/" + caseToken, Token: "t"}, "gitea provider: the address path is not <owner>/<repository>"},
		{Options{Type: "gitea", Address: "ssh://gitea.example/acme/" + caseToken, Token: "t"}, `the address is not an http(s) repository URL: scheme "ssh"`},
		{Options{Type: "bitbucketserver", Address: "https://bb.example/scm/P/r.git", Username: "bot"}, "the secret has neither a token key nor username and password keys"},
		{Options{Type: "bitbucketserver", Address: "https://bb.example/projects/P/" + caseToken, Token: "t"}, "the address is not an HTTP clone URL (no /scm/ in its path)"},
		{Options{Type: "bitbucketserver", Address: "https://bb.example/scm/" + caseToken, Token: "t"}, "the address path is not <context>/scm/<project>/<repository>"},
		{Options{Type: "bitbucket", Address: "https://bitbucket.org/acme/app", Token: caseToken}, "the secret's token key is not <username>:<app password>"},
		{Options{Type: "bitbucket", Address: "https://bitbucket.org/acme/app"}, "bitbucket provider: the secret has no token key"},
		{Options{Type: "azuredevops", Address: "https://dev.azure.com/org/proj/" + caseToken, Token: "t"}, "the address path is not <organization>/<project>/_git/<repository>"},
		{Options{Type: "azuredevops", Address: "https://dev.azure.com/org/proj/_git/app"}, "azuredevops provider: the secret has no token key"},
		{Options{Type: "githubdispatch"}, "githubdispatch provider: no address"},
		{Options{Type: "githubdispatch", Address: "https://github.com/acme/app"}, "githubdispatch provider: the secret has no token key"},
	} {
		_, err := New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), caseToken) {
			t.Errorf("%s %q: error %v, want %q", tc.opts.Type, tc.opts.Address, err, tc.want)
		}
	}
}

// TestGitTypesAPIBases: public hosts use their API hosts; the Bitbucket
// Server clone URL keeps its context path and drops its userinfo.
func TestGitTypesAPIBases(t *testing.T) {
	b, err := newBitbucket(Options{Type: "bitbucket", Address: "https://bitbucket.org/acme/app.git", Token: "u:p"})
	if err != nil || b.api != "https://api.bitbucket.org/2.0/repositories/acme/app" {
		t.Errorf("bitbucket api %v %v", b, err)
	}
	s, err := newBitbucketServer(Options{Type: "bitbucketserver", Address: "https://u:" + caseToken + "@bb.example/ctx/scm/P/app.git", Token: "t"})
	if err != nil || s.builds != "https://bb.example/ctx/rest/api/latest/projects/P/repos/app/commits" || s.link != "https://bb.example/ctx/scm/P/app.git" {
		t.Errorf("bitbucketserver %v %v", s, err)
	}
	d, err := newGitHubDispatch(Options{Type: "githubdispatch", Address: "https://github.com/acme/app", Token: "t"})
	if err != nil || d.api != "https://api.github.com" {
		t.Errorf("githubdispatch %v %v", d, err)
	}
}

// TestGitHubDispatch: the event goes whole as client_payload of a
// repository_dispatch named after the object.
func TestGitHubDispatch(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return http.StatusNoContent, "" })
	n := newNotifier(t, Options{Type: "githubdispatch", Address: srv.URL + "/acme/platform", Token: caseToken})
	ev := alertEvent("info", "ReconciliationSucceeded")
	if err := n.Post(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	r := srv.reqs[0]
	if r.Method != http.MethodPost || r.URL.Path != "/api/v3/repos/acme/platform/dispatches" || r.Header.Get("Authorization") != "Bearer "+caseToken {
		t.Errorf("request %s %s auth %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
	}
	var got struct {
		EventType     string          `json:"event_type"`
		ClientPayload json.RawMessage `json:"client_payload"`
	}
	_ = json.Unmarshal(srv.bodies[0], &got)
	want, _ := json.Marshal(ev)
	if got.EventType != "Kustomization/apps.flux-system" || string(got.ClientPayload) != string(want) {
		t.Errorf("dispatch %s", srv.bodies[0])
	}
	gone := newRecorder(t, func(int) (int, string) { return http.StatusNotFound, `{"message":"Not Found"}` })
	n = newNotifier(t, Options{Type: "githubdispatch", Address: gone.URL + "/acme/platform", Token: caseToken})
	if err := n.Post(context.Background(), ev); err == nil || err.Error() != `githubdispatch: answered 404: {"message":"Not Found"}` {
		t.Errorf("refused dispatch: %v", err)
	}
}
