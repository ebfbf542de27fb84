package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/config"
)

// A token written as the URL's user name (`https://<token>@host`) is quoted
// by go-git when the server answers an unexpected status; it must not reach
// the error (status, events and logs show it).
func TestGitErrorsQuoteNoTokenFromTheURL(t *testing.T) {
	const token = "ghp_s3cr3tT0ken"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	withToken := strings.Replace(srv.URL, "http://", "http://"+token+"@", 1) + "/repo.git"
	check := func(what string, err error) {
		t.Helper()
		if err == nil || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "xxxxx@") {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err := Clone(context.Background(), withToken, nil, Ref{Branch: "main"}, t.TempDir())
	check("clone", err)
	_, err = RemoteHead(context.Background(), withToken, nil, "main")
	check("remote head", err)

	c := clone(t, newPushableRepo(t), Ref{Branch: "main"})
	cfg, err := c.Repo.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Remotes[remoteName] = &config.RemoteConfig{Name: remoteName, URLs: []string{withToken}}
	if err := c.Repo.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	_, err = c.Update(context.Background(), applySetters("deploy"), message(""), author, PushSpec{})
	check("push", err)
}

// go-git words a 403 as "authorization failed: <body>"; git
// http-backend's refusal of a push has no body. The message then says the
// status and what it means, and a reason the server did give is kept, on
// one line.
func TestAnUnexplainedRefusalIsWorded(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"", "push to branch 'main': authorization failed (the server answered 403 Forbidden without a reason: " +
			"the credentials lack access (write access, for a push), or the server takes no pushes)"},
		{"Push not allowed\n", "push to branch 'main': authorization failed: Push not allowed"},
		{"line one\nline two\n", "push to branch 'main': authorization failed: line one line two"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-receive-pack" {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(tc.body))
				return
			}
			http.NotFound(w, r)
		}))
		c := clone(t, newPushableRepo(t), Ref{Branch: "main"})
		cfg, err := c.Repo.Config()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Remotes[remoteName] = &config.RemoteConfig{Name: remoteName, URLs: []string{srv.URL + "/repo.git"}}
		if err := c.Repo.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		_, err = c.Update(context.Background(), applySetters("deploy"), message(""), author, PushSpec{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("body %q:\n got %v\nwant %s", tc.body, err, tc.want)
		}
		srv.Close()
	}
}
