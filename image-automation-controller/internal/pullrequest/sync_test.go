package pullrequest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/eddyops/eddy/image-automation-controller/internal/pullrequest/prtest"
)

const token = "s3cr3t-token-value"

func TestSyncKeepsOneOpenPullRequestAndClosesSupersededOnes(t *testing.T) {
	for provider, superseded := range map[string]string{"github": "Superseded by #2", "gitlab": "Superseded by !2"} {
		t.Run(provider, func(t *testing.T) {
			api := prtest.New(token)
			defer api.Close()
			p, err := New(provider, api.URL, "https://git.example.test/team/config.git", token, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, marker := context.Background(), Marker("apps", "podinfo")
			s, err := Sync(ctx, p, marker, "image-updates/podinfo", "main", "Update", "a → b")
			if err != nil || s.Action != Opened || s.PR.Number != 1 {
				t.Fatalf("first sync: %+v, %v", s, err)
			}
			if s, err = Sync(ctx, p, marker, "image-updates/podinfo", "main", "Update", "a → b"); err != nil || s.Action != Unchanged {
				t.Fatalf("same sync: %+v, %v", s, err)
			}
			if s, err = Sync(ctx, p, marker, "image-updates/podinfo", "main", "Update", "a → c"); err != nil || s.Action != Updated || s.PR.Number != 1 {
				t.Fatalf("new change: %+v, %v", s, err)
			}
			if s, err = Sync(ctx, p, marker, "image-updates/v2", "main", "Update", "a → c"); err != nil || s.Action != Opened || len(s.Superseded) != 1 {
				t.Fatalf("new branch: %+v, %v", s, err)
			}
			prs := api.PRs()
			if len(prs) != 2 || prs[0].Open || !prs[1].Open || len(prs[0].Comments) != 1 || !strings.Contains(prs[0].Comments[0], superseded) {
				t.Fatalf("pull requests: %+v", prs)
			}
			if !strings.Contains(prs[1].Body, marker) {
				t.Fatalf("body has no marker: %q", prs[1].Body)
			}
			if s, err = Sync(ctx, p, marker, "", "main", "", ""); err != nil || s.Action != Closed || api.PRs()[1].Open {
				t.Fatalf("nothing to propose: %+v, %v", s, err)
			}
		})
	}
}

func TestAPIErrorsAreStableAndSecretFree(t *testing.T) {
	api := prtest.New(token)
	defer api.Close()
	p, err := New("github", api.URL, "git@github.example.test:team/config.git", "wrong-"+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Sync(context.Background(), p, Marker("a", "b"), "h", "main", "t", "b")
	if err == nil || err.Error() != "github API: 401 Bad credentials" {
		t.Fatalf("401: %v", err)
	}
	api.Fail(http.StatusUnprocessableEntity, "Validation Failed")
	_, err = Sync(context.Background(), p, Marker("a", "b"), "h", "main", "t", "b")
	if err == nil || err.Error() != "github API: 422 Validation Failed" || strings.Contains(err.Error(), token) {
		t.Fatalf("422: %v", err)
	}
}

func TestAPIURLIsDerivedFromTheGitHost(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/team/config.git": "https://api.github.com",
		"ssh://git@github.com/team/config":   "https://api.github.com",
		"git@github.com:team/config.git":     "https://api.github.com",
	} {
		p, err := New("github", "", url, token, nil)
		if err != nil || p.(*gitHub).base != want || p.(*gitHub).repo != "/repos/team/config" {
			t.Fatalf("%s: %+v %v", url, p, err)
		}
	}
	p, err := New("gitlab", "", "https://gitlab.com/group/sub/config.git", token, nil)
	if err != nil || p.(*gitLab).base != "https://gitlab.com/api/v4" || p.(*gitLab).project != "/projects/group%2Fsub%2Fconfig" {
		t.Fatalf("gitlab: %+v %v", p, err)
	}
	if _, err := New("github", "", "https://ghe.example.test/team/config", token, nil); err == nil || !strings.Contains(err.Error(), "apiURL is required") {
		t.Fatalf("enterprise host without apiURL: %v", err)
	}
}
