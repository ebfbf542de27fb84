package pullrequest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An API's refusal becomes a bounded, token-free message: a huge error
// body, a message echoing the token, GitLab's message array.
func TestAPIErrorMessagesBoundedAndTokenFree(t *testing.T) {
	const token = "glpat-secret-token"
	for _, tc := range []struct {
		name, body string
		want       func(string) bool
	}{
		{"huge", `{"message":"` + strings.Repeat("x", 100000) + `"}`, func(m string) bool { return len(m) < 1100 }},
		{"echo", `{"message":"token ` + token + ` is not valid"}`, func(m string) bool { return m == "gitlab API: 400 token *** is not valid" }},
		{"array", `{"message":["Another open merge request already exists for this source branch: !5"]}`,
			func(m string) bool {
				return m == "gitlab API: 400 Another open merge request already exists for this source branch: !5"
			}},
	} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(tc.body))
		}))
		p, err := New("gitlab", s.URL, "https://gitlab.example/group/sub/project.git", token, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Open(context.Background(), "m")
		s.Close()
		if err == nil || !tc.want(err.Error()) || strings.Contains(err.Error(), token) {
			t.Errorf("%s: error %.300q", tc.name, err)
		}
	}
}

// A redirect to another host is refused: Go's client forwards GitLab's
// PRIVATE-TOKEN header to it (it drops only Authorization and cookies).
func TestRedirectToAnotherHostRefused(t *testing.T) {
	reached := false
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		_, _ = w.Write([]byte(`[]`))
	}))
	defer other.Close()
	to := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
	}))
	defer api.Close()
	for _, provider := range []string{"gitlab", "github"} {
		p, err := New(provider, api.URL, "https://git.example/owner/repo.git", "tok", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Open(context.Background(), "m")
		if !errors.Is(err, ErrRedirectOtherHost) && (err == nil || !strings.Contains(err.Error(), ErrRedirectOtherHost.Error())) {
			t.Errorf("%s: error %v, want the redirect refused", provider, err)
		}
	}
	if reached {
		t.Error("the other host was called")
	}
}
