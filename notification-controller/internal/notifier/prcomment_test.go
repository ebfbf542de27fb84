package notifier

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/events"
)

// prCommentFake answers as GitHub: the token's login, then the pull
// request's comments (comments), then 201 to the write.
func prCommentFake(t *testing.T, comments string) *recorder {
	return newRecorder(t, func(n int) (int, string) {
		switch n {
		case 1:
			return http.StatusOK, `{"login":"flux-bot"}`
		case 2:
			return http.StatusOK, comments
		}
		return http.StatusCreated, "{}"
	})
}

func prEvent() *events.Event {
	ev := alertEvent("error", "HealthCheckFailed")
	ev.Metadata["change_request"] = "42"
	return ev
}

// TestGitHubPRCommentCreates: with no comment of the token's user holding
// the key, a comment with the key and Flux's Markdown is created on the
// pull request.
func TestGitHubPRCommentCreates(t *testing.T) {
	srv := prCommentFake(t, `[{"id":5,"body":"<!-- flux-pr-comment-key:uid-1/Kustomization/flux-system/apps -->","user":{"login":"someone-else"}}]`)
	n := newNotifier(t, Options{Type: "githubpullrequestcomment", Address: srv.URL + "/acme/app", Token: caseToken, ProviderUID: "uid-1"})
	if err := n.Post(context.Background(), prEvent()); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /api/v3/user", "GET /api/v3/repos/acme/app/issues/42/comments?sort=created&direction=asc&per_page=100",
		"POST /api/v3/repos/acme/app/issues/42/comments"}
	for i, r := range srv.reqs {
		if got := r.Method + " " + r.URL.RequestURI(); i >= len(want) || got != want[i] || r.Header.Get("Authorization") != "Bearer "+caseToken {
			t.Errorf("request %d: %s", i, got)
		}
	}
	var got map[string]string
	_ = json.Unmarshal(srv.bodies[2], &got)
	wantBody := "<!-- flux-pr-comment-key:uid-1/Kustomization/flux-system/apps -->\n\n## Flux Status\n\n⚠️ Kustomization/flux-system/apps\n\n" +
		"Reconciliation finished in 1.2s, next run in 10m0s\nsecond line\n\nMetadata:\n* `revision`: main@sha1:" + sha + "\n* `summary`: prod\n"
	if got["body"] != wantBody {
		t.Errorf("body %q\nwant %q", got["body"], wantBody)
	}
}

// TestGitHubPRCommentUpdates: the comment of the token's user holding the
// key is edited in place; the login is read once.
func TestGitHubPRCommentUpdates(t *testing.T) {
	srv := prCommentFake(t, `[{"id":9,"body":"old\n<!-- flux-pr-comment-key:uid-1/Kustomization/flux-system/apps -->","user":{"login":"flux-bot"}}]`)
	n := newNotifier(t, Options{Type: "githubpullrequestcomment", Address: srv.URL + "/acme/app", Token: caseToken, ProviderUID: "uid-1"})
	if err := n.Post(context.Background(), prEvent()); err != nil {
		t.Fatal(err)
	}
	if r := srv.reqs[2]; r.Method != http.MethodPatch || r.URL.Path != "/api/v3/repos/acme/app/issues/comments/9" {
		t.Errorf("write %s %s", r.Method, r.URL.Path)
	}
	if err := n.Post(context.Background(), prEvent()); err != nil {
		t.Fatal(err)
	}
	if len(srv.reqs) != 5 || srv.reqs[3].URL.Path == "/api/v3/user" {
		t.Errorf("%d requests; the login must be read once", len(srv.reqs))
	}
}

// TestGitHubPRCommentFailures: no pull request number, a refused read and
// a missing UID are errors naming what failed, never the token.
func TestGitHubPRCommentFailures(t *testing.T) {
	srv := newRecorder(t, func(int) (int, string) { return http.StatusUnauthorized, `{"message":"Bad credentials"}` })
	n := newNotifier(t, Options{Type: "githubpullrequestcomment", Address: srv.URL + "/acme/app", Token: caseToken, ProviderUID: "uid-1"})
	for ev, want := range map[*events.Event]string{
		alertEvent("error", "HealthCheckFailed"): "githubpullrequestcomment: metadata change_request is not a pull request number",
		prEvent():                                "githubpullrequestcomment: reading the token's user: answered 401",
	} {
		if err := n.Post(context.Background(), ev); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), caseToken) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if _, err := New(Options{Type: "githubpullrequestcomment", Address: "https://github.com/acme/app", Token: "t"}); err == nil ||
		err.Error() != "githubpullrequestcomment provider: the Provider has no UID" {
		t.Errorf("no UID: %v", err)
	}
}

// TestGiteaPRComment: Gitea's API takes the same calls under /api/v1 with
// `token` auth: a new comment is created, the user's keyed one edited.
func TestGiteaPRComment(t *testing.T) {
	key := "<!-- flux-pr-comment-key:uid-1/Kustomization/flux-system/apps -->"
	for _, tc := range []struct {
		comments, write string
	}{
		{`[]`, "POST /api/v1/repos/acme/app/issues/42/comments"},
		{`[{"id":3,"body":"` + key + `","user":{"login":"someone-else"}},{"id":7,"body":"` + key + `","user":{"login":"flux-bot"}}]`,
			"PATCH /api/v1/repos/acme/app/issues/comments/7"},
	} {
		srv := prCommentFake(t, tc.comments)
		n := newNotifier(t, Options{Type: "giteapullrequestcomment", Address: srv.URL + "/acme/app.git", Password: caseToken, ProviderUID: "uid-1"})
		if err := n.Post(context.Background(), prEvent()); err != nil {
			t.Fatal(err)
		}
		want := []string{"GET /api/v1/user", "GET /api/v1/repos/acme/app/issues/42/comments?page=1&limit=100", tc.write}
		for i, r := range srv.reqs {
			if got := r.Method + " " + r.URL.RequestURI(); i >= len(want) || got != want[i] || r.Header.Get("Authorization") != "token "+caseToken {
				t.Errorf("request %d: %s auth %q", i, got, r.Header.Get("Authorization"))
			}
		}
		var got map[string]string
		if len(srv.bodies) != 3 || json.Unmarshal(srv.bodies[2], &got) != nil || !strings.HasPrefix(got["body"], key+"\n\n## Flux Status\n\n⚠️ ") {
			t.Errorf("%d requests, comment %q", len(srv.reqs), got["body"])
		}
	}
	if _, err := New(Options{Type: "giteapullrequestcomment", Address: "https://gitea.example/acme/app", ProviderUID: "u"}); err == nil ||
		err.Error() != "giteapullrequestcomment provider: the secret has no token key" {
		t.Errorf("no token: %v", err)
	}
}

// TestGitLabMRComment: GitLab's notes are read and written under the
// URL-encoded project with PRIVATE-TOKEN; the user's keyed note is
// replaced with PUT, else a note is created.
func TestGitLabMRComment(t *testing.T) {
	key := "<!-- flux-mr-comment-key:uid-1/Kustomization/flux-system/apps -->"
	notes := "/api/v4/projects/group%2Fsub%2Fapp/merge_requests/42/notes"
	for _, tc := range []struct {
		notes, write string
	}{
		{`[{"id":3,"body":"<!-- flux-pr-comment-key:uid-1/Kustomization/flux-system/apps -->","author":{"username":"flux-bot"}}]`, "POST " + notes},
		{`[{"id":3,"body":"` + key + `","author":{"username":"someone-else"}},{"id":8,"body":"` + key + `","author":{"username":"flux-bot"}}]`,
			"PUT " + notes + "/8"},
	} {
		srv := newRecorder(t, func(n int) (int, string) {
			switch n {
			case 1:
				return http.StatusOK, `{"username":"flux-bot"}`
			case 2:
				return http.StatusOK, tc.notes
			}
			return http.StatusOK, "{}"
		})
		n := newNotifier(t, Options{Type: "gitlabmergerequestcomment", Address: srv.URL + "/group/sub/app", Token: caseToken, ProviderUID: "uid-1"})
		if err := n.Post(context.Background(), prEvent()); err != nil {
			t.Fatal(err)
		}
		want := []string{"GET /api/v4/user", "GET " + notes + "?sort=asc&order_by=created_at&per_page=100", tc.write}
		for i, r := range srv.reqs {
			if got := r.Method + " " + r.URL.EscapedPath() + queryOf(r); i >= len(want) || got != want[i] || r.Header.Get("PRIVATE-TOKEN") != caseToken {
				t.Errorf("request %d: %s", i, got)
			}
		}
		var got map[string]string
		if len(srv.bodies) != 3 || json.Unmarshal(srv.bodies[2], &got) != nil || !strings.HasPrefix(got["body"], key+"\n\n## Flux Status\n\n") {
			t.Errorf("%d requests, note %q", len(srv.reqs), got["body"])
		}
	}
}

func queryOf(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}
