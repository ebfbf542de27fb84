package app

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/ui"
)

// field writes one "Label:  value" line of argocd's summaries, the value at
// column 21.
func field(w io.Writer, label, value string) {
	fmt.Fprintf(w, "%-20s%s\n", label, value)
}

// PrintSummary writes the summary of `argocd app get`: Name, Project,
// Server, Namespace, the sources (Repo, Target, Path, Ref, Helm Values,
// Name Prefix), SyncWindow (always "Sync Allowed": Eddy enforces no sync
// windows), Sync Policy, Sync Status and Health Status.
func PrintSummary(w io.Writer, a *argov1.Application) {
	field(w, "Name:", QualifiedName(a))
	field(w, "Project:", a.GetProject())
	field(w, "Server:", Server(a))
	field(w, "Namespace:", a.Spec.Destination.Namespace)
	if a.IsMultiSource() {
		fmt.Fprintln(w, "Sources:")
	} else {
		fmt.Fprintln(w, "Source:")
	}
	for _, s := range a.GetSources() {
		field(w, "- Repo:", s.RepoURL)
		field(w, "  Target:", s.TargetRevision)
		if s.Path != "" {
			field(w, "  Path:", s.Path)
		}
		if s.Chart != "" {
			field(w, "  Chart:", s.Chart)
		}
		if s.Ref != "" {
			field(w, "  Ref:", s.Ref)
		}
		if s.Helm != nil && len(s.Helm.ValueFiles) > 0 {
			field(w, "  Helm Values:", strings.Join(s.Helm.ValueFiles, ","))
		}
		if s.Kustomize != nil && s.Kustomize.NamePrefix != "" {
			field(w, "  Name Prefix:", s.Kustomize.NamePrefix)
		}
	}
	field(w, "SyncWindow:", "Sync Allowed")
	policy := "Manual"
	if a.IsAutomated() {
		policy = "Automated"
		if a.Spec.SyncPolicy.Automated.IsPrune() {
			policy += " (Prune)"
		}
	}
	field(w, "Sync Policy:", policy)
	field(w, "Sync Status:", SyncStatus(a))
	field(w, "Health Status:", a.Status.Health.Status)
}

// PrintConditions writes the CONDITION, MESSAGE, LAST TRANSITION table of
// status.conditions (nothing without conditions); LAST TRANSITION only when
// a condition has a time, so that no row ends in blanks.
func PrintConditions(w io.Writer, a *argov1.Application) error {
	if len(a.Status.Conditions) == 0 {
		return nil
	}
	timed := false
	for _, c := range a.Status.Conditions {
		timed = timed || c.LastTransitionTime != nil
	}
	header := []string{"CONDITION", "MESSAGE"}
	if timed {
		header = append(header, "LAST TRANSITION")
	}
	rows := [][]string{header}
	for _, c := range a.Status.Conditions {
		r := []string{c.Type, ui.OneLine(c.Message)}
		if timed {
			at := ""
			if c.LastTransitionTime != nil {
				at = c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
			r = append(r, at)
		}
		rows = append(rows, r)
	}
	return ui.WriteTable(w, rows, 2)
}

// PrintOperation writes the result of status.operationState as argocd does
// after a sync: Operation and Sync Revision (with a sync result), Phase,
// Start, Finished, Duration (to now while running, whole seconds) and
// Message. Nothing when st is nil.
func PrintOperation(w io.Writer, st *argov1.OperationState, now time.Time) {
	if st == nil {
		return
	}
	if st.SyncResult != nil {
		field(w, "Operation:", "Sync")
		rev := st.SyncResult.Revision
		if len(st.SyncResult.Sources) > 0 && len(st.SyncResult.Revisions) > 0 {
			rev = strings.Join(st.SyncResult.Revisions, ", ")
		}
		field(w, "Sync Revision:", rev)
	}
	field(w, "Phase:", st.Phase)
	field(w, "Start:", st.StartedAt.UTC().Format(time.RFC3339))
	end, finished := now, ""
	if st.FinishedAt != nil {
		end, finished = st.FinishedAt.Time, st.FinishedAt.UTC().Format(time.RFC3339)
	}
	field(w, "Finished:", finished)
	field(w, "Duration:", (time.Duration(end.Unix()-st.StartedAt.Unix()) * time.Second).String())
	if st.Message != "" {
		field(w, "Message:", ui.OneLine(st.Message))
	}
}

// ResourceState is one row of argocd's resources table.
type ResourceState struct {
	Group, Kind, Namespace, Name  string
	Status, Health, Hook, Message string
}

// ResourceStates are the rows of the resources table, as argocd builds
// them: first the objects of the last sync result, in its order (a hook
// shows its hook phase as STATUS and its sync result as HEALTH; another
// object its current sync status and health from status.resources), then
// the other objects of status.resources, sorted by group, kind, namespace
// and name.
func ResourceStates(a *argov1.Application) []ResourceState {
	type key struct{ group, kind, namespace, name string }
	byKey := map[key]argov1.ResourceStatus{}
	for _, r := range a.Status.Resources {
		byKey[key{r.Group, r.Kind, r.Namespace, r.Name}] = r
	}
	var states []ResourceState
	if st := a.Status.OperationState; st != nil && st.SyncResult != nil {
		for _, r := range st.SyncResult.Resources {
			if r == nil {
				continue
			}
			k := key{r.Group, r.Kind, r.Namespace, r.Name}
			s := ResourceState{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
				Status: r.HookPhase, Health: r.Status, Hook: r.HookType, Message: ui.OneLine(r.Message)}
			if live, ok := byKey[k]; ok && r.HookType == "" {
				s.Status, s.Health = live.Status, healthOf(live)
			}
			delete(byKey, k)
			states = append(states, s)
		}
	}
	rest := make([]key, 0, len(byKey))
	for k := range byKey {
		rest = append(rest, k)
	}
	sort.Slice(rest, func(i, j int) bool {
		a, b := rest[i], rest[j]
		return strings.Join([]string{a.group, a.kind, a.namespace, a.name}, "/") <
			strings.Join([]string{b.group, b.kind, b.namespace, b.name}, "/")
	})
	for _, k := range rest {
		r := byKey[k]
		states = append(states, ResourceState{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: r.Status, Health: healthOf(r)})
	}
	return states
}

func healthOf(r argov1.ResourceStatus) string {
	if r.Health == nil {
		return ""
	}
	return r.Health.Status
}

// PrintResources writes the GROUP, KIND, NAMESPACE, NAME, STATUS, HEALTH,
// HOOK, MESSAGE table of ResourceStates (nothing when there are none).
func PrintResources(w io.Writer, a *argov1.Application) error {
	states := ResourceStates(a)
	if len(states) == 0 {
		return nil
	}
	rows := [][]string{{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH", "HOOK", "MESSAGE"}}
	for _, s := range states {
		rows = append(rows, []string{s.Group, s.Kind, s.Namespace, s.Name, s.Status, s.Health, s.Hook, s.Message})
	}
	return ui.WriteTable(w, rows, 2)
}

// PrintApp writes what `argocd app get` prints: the summary, the conditions
// table, with showOperation the last operation's result, then the
// resources table, each part after an empty line.
func PrintApp(w io.Writer, a *argov1.Application, showOperation bool, now time.Time) error {
	PrintSummary(w, a)
	if len(a.Status.Conditions) > 0 {
		fmt.Fprintln(w)
		if err := PrintConditions(w, a); err != nil {
			return err
		}
	}
	if showOperation && a.Status.OperationState != nil {
		fmt.Fprintln(w)
		PrintOperation(w, a.Status.OperationState, now)
	}
	if len(ResourceStates(a)) > 0 {
		fmt.Fprintln(w)
		return PrintResources(w, a)
	}
	return nil
}
