package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/google/go-github/v84/github"
)

// GitHub is the part of GitHub's REST API that `bootstrap github` calls:
// the repository (GET /repos/{owner}/{repo}, POST /user/repos or
// /orgs/{org}/repos) and its deploy keys (GET/POST/DELETE
// /repos/{owner}/{repo}/keys).
type GitHub struct {
	Client       *github.Client
	Owner, Repo  string
	Personal     bool
	Private      bool
	ReadWriteKey bool
}

// NewGitHubClient returns a client for hostname (github.com, or a GitHub
// Enterprise host at https://<hostname>/api/v3/) with token; apiURL, when
// set, is the API's base URL instead (a test's fake).
func NewGitHubClient(token, hostname, apiURL string) (*github.Client, error) {
	c := github.NewClient(nil).WithAuthToken(token)
	switch {
	case apiURL != "":
		u, err := url.Parse(strings.TrimSuffix(apiURL, "/") + "/")
		if err != nil {
			return nil, fmt.Errorf("--api-url: %w", err)
		}
		c.BaseURL, c.UploadURL = u, u
		return c, nil
	case hostname != "" && hostname != "github.com":
		return c.WithEnterpriseURLs("https://"+hostname+"/api/v3/", "https://"+hostname+"/api/uploads/")
	}
	return c, nil
}

// ReconcileRepository gets the repository, creating it (private unless
// Private is false, initialised with a first commit) when it does not
// exist; it returns its HTTPS clone URL.
func (g *GitHub) ReconcileRepository(ctx context.Context, u *ui.UI) (string, error) {
	u.Action("connecting to %s", g.Client.BaseURL.Host)
	repo, resp, err := g.Client.Repositories.Get(ctx, g.Owner, g.Repo)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return "", gitHubError(fmt.Sprintf("getting repository %s/%s", g.Owner, g.Repo), err)
	}
	if err != nil {
		org := g.Owner
		if g.Personal {
			org = ""
		}
		repo, _, err = g.Client.Repositories.Create(ctx, org, &github.Repository{
			Name: github.Ptr(g.Repo), Private: github.Ptr(g.Private), AutoInit: github.Ptr(true),
		})
		if err != nil {
			return "", gitHubError(fmt.Sprintf("creating repository %s/%s", g.Owner, g.Repo), err)
		}
		u.Success("repository %q created", g.Owner+"/"+g.Repo)
	} else {
		u.Success("repository %q exists", g.Owner+"/"+g.Repo)
	}
	if repo.GetCloneURL() == "" {
		return "", fmt.Errorf("GitHub returned no clone URL for %s/%s", g.Owner, g.Repo)
	}
	return repo.GetCloneURL(), nil
}

// DeployKeyTitle is flux's deploy key name: the non-empty parts of
// namespace, branch, secret name and path joined by "-".
func DeployKeyTitle(namespace, branch, secretName, path string) string {
	var parts []string
	for _, p := range []string{namespace, branch, secretName, path} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "-")
}

// ReconcileDeployKey makes the repository's deploy key titled title the
// public key: kept when equal, replaced when it differs, read-only unless
// ReadWriteKey.
func (g *GitHub) ReconcileDeployKey(ctx context.Context, u *ui.UI, title string, publicKey []byte) error {
	u.Success("public key: %s", strings.TrimSpace(string(publicKey)))
	want := strings.TrimSpace(string(publicKey))
	keys, _, err := g.Client.Repositories.ListKeys(ctx, g.Owner, g.Repo, &github.ListOptions{PerPage: 100})
	if err != nil {
		return gitHubError("listing deploy keys", err)
	}
	for _, k := range keys {
		if k.GetTitle() != title {
			continue
		}
		if sameKey(k.GetKey(), want) && k.GetReadOnly() == !g.ReadWriteKey {
			return nil
		}
		if _, err := g.Client.Repositories.DeleteKey(ctx, g.Owner, g.Repo, k.GetID()); err != nil {
			return gitHubError("replacing deploy key "+title, err)
		}
	}
	if _, _, err := g.Client.Repositories.CreateKey(ctx, g.Owner, g.Repo, &github.Key{
		Title: github.Ptr(title), Key: github.Ptr(want), ReadOnly: github.Ptr(!g.ReadWriteKey),
	}); err != nil {
		return gitHubError("adding deploy key "+title, err)
	}
	u.Success("configured deploy key %q for %q", title, g.Owner+"/"+g.Repo)
	return nil
}

// sameKey compares authorized_keys lines by type and key, not comment.
func sameKey(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	return len(fa) >= 2 && len(fb) >= 2 && fa[0] == fb[0] && fa[1] == fb[1]
}

func gitHubError(what string, err error) error {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: GitHub refused the token (401): check GITHUB_TOKEN", what)
		case http.StatusForbidden, http.StatusNotFound:
			return fmt.Errorf("%s: GitHub answered %d %s: check --owner, --personal and the token's scopes", what, er.Response.StatusCode, er.Message)
		}
		return fmt.Errorf("%s: GitHub answered %d %s", what, er.Response.StatusCode, er.Message)
	}
	return fmt.Errorf("%s: %s", what, ui.OneLine(err.Error()))
}
