package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// gitHub is the GitHub REST API (pulls and issue comments).
type gitHub struct {
	*api
	repo string // /repos/{owner}/{repo}
}

type ghPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p ghPull) pr() PullRequest {
	return PullRequest{Number: p.Number, URL: p.HTMLURL, Head: p.Head.Ref, Base: p.Base.Ref, Title: p.Title, Body: p.Body,
		Ref: fmt.Sprintf("#%d", p.Number), Kind: "pull request"}
}

// maxPages bounds the listing of open pull requests (100 a page).
const maxPages = 10

func (g *gitHub) Open(ctx context.Context, marker string) ([]PullRequest, error) {
	var out []PullRequest
	for page := 1; page <= maxPages; page++ {
		var list []ghPull
		if err := g.call(ctx, http.MethodGet, fmt.Sprintf("%s/pulls?state=open&per_page=100&page=%d", g.repo, page), nil, &list); err != nil {
			return nil, err
		}
		for _, p := range list {
			if strings.Contains(p.Body, marker) {
				out = append(out, p.pr())
			}
		}
		if len(list) < 100 {
			break
		}
	}
	return out, nil
}

func (g *gitHub) Create(ctx context.Context, head, base, title, body string) (PullRequest, error) {
	var p ghPull
	in := map[string]string{"head": head, "base": base, "title": title, "body": body}
	err := g.call(ctx, http.MethodPost, g.repo+"/pulls", in, &p)
	return p.pr(), err
}

func (g *gitHub) Edit(ctx context.Context, pr PullRequest, title, body string) (PullRequest, error) {
	var p ghPull
	in := map[string]string{"title": title, "body": body}
	err := g.call(ctx, http.MethodPatch, fmt.Sprintf("%s/pulls/%d", g.repo, pr.Number), in, &p)
	return p.pr(), err
}

func (g *gitHub) Close(ctx context.Context, pr PullRequest, comment string) error {
	if err := g.call(ctx, http.MethodPost, fmt.Sprintf("%s/issues/%d/comments", g.repo, pr.Number), map[string]string{"body": comment}, nil); err != nil {
		return err
	}
	return g.call(ctx, http.MethodPatch, fmt.Sprintf("%s/pulls/%d", g.repo, pr.Number), map[string]string{"state": "closed"}, nil)
}
