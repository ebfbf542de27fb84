package app

import (
	"fmt"
	"io"
	"strconv"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/ui"
)

// PrintHistory writes status.history as `argocd app history` does: per
// source repository (in order of first appearance) a "SOURCE <repoURL>"
// line, then an ID, DATE, REVISION table; REVISION is the source's
// targetRevision followed by the deployed commit's first 7 digits in
// parentheses. Tables of several repositories are one empty line apart.
func PrintHistory(w io.Writer, history []argov1.RevisionHistory) error {
	var repos []string
	rows := map[string][][]string{}
	add := func(repo string, h argov1.RevisionHistory, target, rev string) {
		if _, ok := rows[repo]; !ok {
			repos = append(repos, repo)
			rows[repo] = [][]string{{"ID", "DATE", "REVISION"}}
		}
		if len(rev) >= 7 {
			target = fmt.Sprintf("%s (%s)", target, rev[:7])
		}
		rows[repo] = append(rows[repo], []string{strconv.FormatInt(h.ID, 10), h.DeployedAt.UTC().Format(time.RFC3339), target})
	}
	for _, h := range history {
		if len(h.Sources) > 0 {
			for i, s := range h.Sources {
				rev := ""
				if len(h.Revisions) == len(h.Sources) {
					rev = h.Revisions[i]
				}
				add(s.RepoURL, h, s.TargetRevision, rev)
			}
			continue
		}
		add(h.Source.RepoURL, h, h.Source.TargetRevision, h.Revision)
	}
	for i, repo := range repos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		// The SOURCE line shares the ID column, as in argocd's table.
		width := len("SOURCE")
		for _, r := range rows[repo] {
			width = max(width, len(r[0]))
		}
		fmt.Fprintf(w, "%-*s  %s\n", width, "SOURCE", repo)
		for _, r := range rows[repo] {
			r[0] = fmt.Sprintf("%-*s", width, r[0])
		}
		if err := ui.WriteTable(w, rows[repo], 2); err != nil {
			return err
		}
	}
	return nil
}

// FindHistory returns the history entry of id; id -1 means the one before
// the newest, as argocd rollback without an ID. Errors worded as argocd's:
// fewer than two entries for -1, or no entry of id.
func FindHistory(a *argov1.Application, id int64) (*argov1.RevisionHistory, error) {
	h := a.Status.History
	if id == -1 {
		if len(h) < 2 {
			return nil, fmt.Errorf("application '%s' should have at least two successful deployments", a.Name)
		}
		return &h[len(h)-2], nil
	}
	for i := range h {
		if h[i].ID == id {
			return &h[i], nil
		}
	}
	return nil, fmt.Errorf("application '%s' does not have deployment id '%d' in history", a.Name, id)
}
