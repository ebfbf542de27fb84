// Package app prints Argo CD Applications the way the argocd CLI does
// (`argocd app list|get|history`, its sync and wait results) and builds the
// operations `eddy app sync` and `eddy app rollback` request, as Argo CD's
// API server builds them. Application is not a row of the kinds table:
// kinds.Object reads Flux's status protocol (metav1.Condition, Ready,
// observedGeneration, reconcile requests, suspend), and an Application has
// none of it (Argo CD's own conditions, sync and health statuses, and an
// operation field instead of a reconcile annotation).
package app

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/ui"
)

// DefaultNamespace is the namespace Argo CD's Applications live in by
// default (the control plane's, `argocd`): the command's namespace when -n
// is not given, and the one whose Applications are named without a prefix.
const DefaultNamespace = "argocd"

// QualifiedName is the name argocd shows: name in DefaultNamespace,
// namespace/name elsewhere.
func QualifiedName(a *argov1.Application) string {
	if a.Namespace == "" || a.Namespace == DefaultNamespace {
		return a.Name
	}
	return a.Namespace + "/" + a.Name
}

// ParseQualifiedName splits "namespace/name" (as argocd accepts it); a
// plain name is in namespace ns.
func ParseQualifiedName(s, ns string) (namespace, name string) {
	if n, rest, ok := strings.Cut(s, "/"); ok {
		return n, rest
	}
	return ns, s
}

// Server is the destination cluster as argocd prints it: the server URL,
// else the cluster name.
func Server(a *argov1.Application) string {
	if a.Spec.Destination.Server == "" {
		return a.Spec.Destination.Name
	}
	return a.Spec.Destination.Server
}

// Source is the first source (spec.source, or spec.sources[0] of a
// multi-source Application); a zero source when there is none.
func Source(a *argov1.Application) argov1.ApplicationSource {
	if s := a.GetSources(); len(s) > 0 {
		return s[0]
	}
	return argov1.ApplicationSource{}
}

// SyncPolicy is the SYNCPOLICY column: Manual, Auto or Auto-Prune.
func SyncPolicy(a *argov1.Application) string {
	if !a.IsAutomated() {
		return "Manual"
	}
	if a.Spec.SyncPolicy.Automated.IsPrune() {
		return "Auto-Prune"
	}
	return "Auto"
}

// ConditionsSummary is the CONDITIONS column: the condition types, sorted,
// each with its count when it occurs more than once ("SyncError(2)"),
// comma-separated; "<none>" without conditions.
func ConditionsSummary(a *argov1.Application) string {
	counts := map[string]int{}
	for _, c := range a.Status.Conditions {
		counts[c.Type]++
	}
	if len(counts) == 0 {
		return "<none>"
	}
	items := make([]string, 0, len(counts))
	for t, n := range counts {
		if n > 1 {
			t = fmt.Sprintf("%s(%d)", t, n)
		}
		items = append(items, t)
	}
	sort.Strings(items)
	return strings.Join(items, ",")
}

// PrintList writes apps as `argocd app list` does: NAME, CLUSTER,
// NAMESPACE (the destination's), PROJECT, STATUS, HEALTH, SYNCPOLICY,
// CONDITIONS, and with wide REPO, PATH and TARGET of the first source.
func PrintList(w io.Writer, apps []argov1.Application, wide bool) error {
	header := []string{"NAME", "CLUSTER", "NAMESPACE", "PROJECT", "STATUS", "HEALTH", "SYNCPOLICY", "CONDITIONS"}
	if wide {
		header = append(header, "REPO", "PATH", "TARGET")
	}
	rows := [][]string{header}
	for i := range apps {
		a := &apps[i]
		r := []string{QualifiedName(a), Server(a), a.Spec.Destination.Namespace, a.GetProject(),
			a.Status.Sync.Status, a.Status.Health.Status, SyncPolicy(a), ConditionsSummary(a)}
		if wide {
			s := Source(a)
			r = append(r, s.RepoURL, s.Path, s.TargetRevision)
		}
		rows = append(rows, r)
	}
	return ui.WriteTable(w, rows, 2)
}

var (
	commitSHA    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	truncatedSHA = regexp.MustCompile(`^[0-9a-f]{7,39}$`)
)

// IsCommitSHA is true of a full or truncated (7+ digits) commit hash.
func IsCommitSHA(rev string) bool {
	rev = strings.ToLower(rev)
	return commitSHA.MatchString(rev) || truncatedSHA.MatchString(rev)
}

// SyncStatus is argocd's "Sync Status:" line: "Synced to <target>",
// "OutOfSync from <target>" or the status alone, then the compared commit's
// first 7 digits in parentheses when the target is not itself a commit. An
// empty targetRevision reads HEAD, as Argo CD resolves it.
func SyncStatus(a *argov1.Application) string {
	target := Source(a).TargetRevision
	if target == "" {
		target = "HEAD"
	}
	s := a.Status.Sync.Status
	switch s {
	case argov1.SyncStatusSynced:
		s += " to " + target
	case argov1.SyncStatusOutOfSync:
		s += " from " + target
	}
	if rev := a.Status.Sync.Revision; !IsCommitSHA(target) && len(rev) > 7 {
		s += " (" + rev[:7] + ")"
	}
	return s
}
