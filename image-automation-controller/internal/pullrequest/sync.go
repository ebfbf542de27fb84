package pullrequest

import (
	"context"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/image-automation-controller/internal/update"
)

// Action is what Sync did to the automation's pull request.
type Action string

const (
	Opened    Action = "opened"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
	// Closed: nothing left to propose; the open ones were closed.
	Closed Action = "closed"
)

// Synced is Sync's outcome.
type Synced struct {
	Action Action
	// PR is the open pull request (zero when Action is Closed).
	PR PullRequest
	// Superseded are the pull requests closed by this run.
	Superseded []PullRequest
}

// Sync keeps one open pull request from head into base whose body holds
// marker: an open one on head is edited when its title or body differ,
// else one is opened; open ones on another head are closed with a comment
// naming the new one. An empty head closes every open one (nothing to
// propose: base already has the changes).
func Sync(ctx context.Context, p Provider, marker, head, base, title, body string) (Synced, error) {
	body = strings.TrimRight(body, "\n") + "\n\n" + marker + "\n"
	open, err := p.Open(ctx, marker)
	if err != nil {
		return Synced{}, err
	}
	var out Synced
	var stale []PullRequest
	for _, pr := range open {
		if head != "" && pr.Head == head && out.Action == "" {
			out.PR, out.Action = pr, Unchanged
			continue
		}
		stale = append(stale, pr)
	}
	switch {
	case head == "":
		out.Action = Closed
	case out.Action == Unchanged && (out.PR.Title != title || out.PR.Body != body):
		if out.PR, err = p.Edit(ctx, out.PR, title, body); err != nil {
			return out, err
		}
		out.Action = Updated
	case out.Action == "":
		if out.PR, err = p.Create(ctx, head, base, title, body); err != nil {
			return out, err
		}
		out.Action = Opened
	}
	for _, pr := range stale {
		comment := fmt.Sprintf("Superseded by %s (branch `%s`): closed by the image update automation.", out.PR.Ref, head)
		if head == "" {
			comment = fmt.Sprintf("Branch `%s` already has these images: closed by the image update automation.", base)
		}
		if err := p.Close(ctx, pr, comment); err != nil {
			return out, err
		}
		out.Superseded = append(out.Superseded, pr)
	}
	return out, nil
}

// Body is the default pull request body: one line per changed image,
// `old → new` with its file and line, in file then line order.
func Body(res update.Result) string {
	var b strings.Builder
	b.WriteString("Image updates:\n\n")
	for _, c := range res.List() {
		fmt.Fprintf(&b, "- `%s` → `%s` in `%s` line %d\n", c.OldValue, c.NewValue, c.File, c.Line)
	}
	return b.String()
}
