package pullrequest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// gitLab is GitLab's REST API v4 (merge requests and their notes).
type gitLab struct {
	*api
	project string // /projects/{url-encoded path}
}

type glMR struct {
	IID          int    `json:"iid"`
	WebURL       string `json:"web_url"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	SourceBranch string `json:"source_branch"`
	TargetBranch string `json:"target_branch"`
}

func (m glMR) pr() PullRequest {
	return PullRequest{Number: m.IID, URL: m.WebURL, Head: m.SourceBranch, Base: m.TargetBranch, Title: m.Title, Body: m.Description,
		Ref: fmt.Sprintf("!%d", m.IID), Kind: "merge request"}
}

func (g *gitLab) Open(ctx context.Context, marker string) ([]PullRequest, error) {
	var out []PullRequest
	for page := 1; page <= maxPages; page++ {
		var list []glMR
		if err := g.call(ctx, http.MethodGet, fmt.Sprintf("%s/merge_requests?state=opened&per_page=100&page=%d", g.project, page), nil, &list); err != nil {
			return nil, err
		}
		for _, m := range list {
			if strings.Contains(m.Description, marker) {
				out = append(out, m.pr())
			}
		}
		if len(list) < 100 {
			break
		}
	}
	return out, nil
}

func (g *gitLab) Create(ctx context.Context, head, base, title, body string) (PullRequest, error) {
	var m glMR
	in := map[string]string{"source_branch": head, "target_branch": base, "title": title, "description": body}
	err := g.call(ctx, http.MethodPost, g.project+"/merge_requests", in, &m)
	return m.pr(), err
}

func (g *gitLab) Edit(ctx context.Context, pr PullRequest, title, body string) (PullRequest, error) {
	var m glMR
	in := map[string]string{"title": title, "description": body}
	err := g.call(ctx, http.MethodPut, fmt.Sprintf("%s/merge_requests/%d", g.project, pr.Number), in, &m)
	return m.pr(), err
}

func (g *gitLab) Close(ctx context.Context, pr PullRequest, comment string) error {
	if err := g.call(ctx, http.MethodPost, fmt.Sprintf("%s/merge_requests/%d/notes", g.project, pr.Number), map[string]string{"body": comment}, nil); err != nil {
		return err
	}
	return g.call(ctx, http.MethodPut, fmt.Sprintf("%s/merge_requests/%d", g.project, pr.Number), map[string]string{"state_event": "close"}, nil)
}
