package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// ErrOperationInProgress is Argo CD's refusal of a sync or rollback while
// the Application's operation field is set.
var ErrOperationInProgress = errors.New("another operation is already in progress")

// SyncRequest is what `eddy app sync` asks for (argocd app sync's flags).
type SyncRequest struct {
	// Revision to sync; empty syncs the source's targetRevision.
	Revision string
	Prune    bool
	DryRun   bool
	// Resources select objects as GROUP:KIND:NAME or
	// GROUP:KIND:NAMESPACE/NAME; a field may be empty (the core group, any
	// namespace) or a glob ('*'); a leading '!' excludes.
	Resources []string
	// SyncOptions are added to spec.syncPolicy.syncOptions; one with the
	// same key replaces the spec's.
	SyncOptions []string
	// Strategy is "hook" (the default, also for "") or "apply"; Force sets
	// the strategy's force.
	Strategy string
	Force    bool
	// Username goes to operation.initiatedBy.username.
	Username string
}

// ResourceFilter is one --resource selection.
type ResourceFilter struct {
	argov1.SyncOperationResource
	Exclude bool
}

// ParseResource parses GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME, with
// a leading '!' to exclude; an error for any other shape.
func ParseResource(s string) (ResourceFilter, error) {
	var f ResourceFilter
	spec := s
	if rest, ok := strings.CutPrefix(spec, "!"); ok {
		spec, f.Exclude = rest, true
	}
	fields := strings.Split(spec, ":")
	if len(fields) != 3 {
		return f, fmt.Errorf("resource %q: want GROUP:KIND:NAME or GROUP:KIND:NAMESPACE/NAME", s)
	}
	f.Group, f.Kind, f.Name = fields[0], fields[1], fields[2]
	if ns, name, ok := strings.Cut(fields[2], "/"); ok {
		if strings.Contains(name, "/") {
			return f, fmt.Errorf("resource %q: want GROUP:KIND:NAMESPACE/NAME", s)
		}
		f.Namespace, f.Name = ns, name
	}
	return f, nil
}

// matches is true when r is selected by f: each field equal or matched as
// a glob, an empty namespace matching any.
func (f ResourceFilter) matches(r argov1.ResourceStatus) bool {
	glob := func(pattern, v string) bool {
		ok, err := path.Match(pattern, v)
		return err == nil && ok
	}
	return glob(f.Group, r.Group) && glob(f.Kind, r.Kind) && glob(f.Name, r.Name) &&
		(f.Namespace == "" || glob(f.Namespace, r.Namespace))
}

// SelectResources returns the objects of status.resources the filters
// select, as argocd does before it requests a selective sync: an object is
// selected when it matches an including filter (or there are only
// excluding ones) and no excluding filter. An error when filters select
// nothing.
func SelectResources(a *argov1.Application, specs []string) ([]argov1.SyncOperationResource, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	var include, exclude []ResourceFilter
	for _, s := range specs {
		f, err := ParseResource(s)
		if err != nil {
			return nil, err
		}
		if f.Exclude {
			exclude = append(exclude, f)
		} else {
			include = append(include, f)
		}
	}
	var out []argov1.SyncOperationResource
	for _, r := range a.Status.Resources {
		in := len(include) == 0
		for _, f := range include {
			in = in || f.matches(r)
		}
		for _, f := range exclude {
			in = in && !f.matches(r)
		}
		if in {
			out = append(out, argov1.SyncOperationResource{Group: r.Group, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no resource of the application matches %s", strings.Join(specs, ", "))
	}
	return out, nil
}

// MergeSyncOptions returns spec's options with extra added; an extra option
// replaces a spec option of the same key (the text before '=').
func MergeSyncOptions(spec, extra []string) []string {
	key := func(o string) string { k, _, _ := strings.Cut(o, "="); return strings.TrimSpace(k) }
	var out []string
	for _, o := range spec {
		replaced := false
		for _, e := range extra {
			replaced = replaced || key(e) == key(o)
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return append(out, extra...)
}

// SyncOperation builds the operation Argo CD's API server writes for a
// sync request: the spec's source (single source) or sources, the revision,
// prune, dry run, the selected resources, the sync options, the strategy
// (hook unless "apply"), the spec's retry strategy and the initiator.
// Refused, with Argo CD's words, when the Application is being deleted, or
// when it syncs automatically and a revision other than its target is
// asked for (unless dry run).
func SyncOperation(a *argov1.Application, req SyncRequest) (*argov1.Operation, error) {
	if a.DeletionTimestamp != nil {
		return nil, errors.New("application is deleting")
	}
	if a.IsMultiSource() && req.Revision != "" {
		return nil, errors.New("--revision does not apply to an application with several sources")
	}
	if target := Source(a).TargetRevision; req.Revision != "" && req.Revision != firstNonEmpty(target, "HEAD") &&
		a.IsAutomated() && !req.DryRun {
		return nil, fmt.Errorf("Cannot sync to %s: auto-sync currently set to %s", req.Revision, target)
	}
	resources, err := SelectResources(a, req.Resources)
	if err != nil {
		return nil, err
	}
	apply := argov1.SyncStrategyApply{Force: req.Force}
	strategy := &argov1.SyncStrategy{}
	switch req.Strategy {
	case "", "hook":
		strategy.Hook = &argov1.SyncStrategyHook{SyncStrategyApply: apply}
	case "apply":
		strategy.Apply = &apply
	default:
		return nil, fmt.Errorf("unknown sync strategy %q: use hook or apply", req.Strategy)
	}
	op := &argov1.Operation{
		Sync: &argov1.SyncOperation{
			Revision: req.Revision, Prune: req.Prune, DryRun: req.DryRun,
			SyncOptions:  MergeSyncOptions(a.GetSyncOptions(), req.SyncOptions),
			SyncStrategy: strategy, Resources: resources, Sources: a.Spec.Sources,
		},
		InitiatedBy: argov1.OperationInitiator{Username: req.Username},
	}
	if !a.IsMultiSource() && a.Spec.Source != nil {
		op.Sync.Source = a.Spec.Source.DeepCopy()
	}
	if p := a.Spec.SyncPolicy; p != nil && p.Retry != nil {
		op.Retry = *p.Retry.DeepCopy()
	}
	return op, nil
}

// RollbackOperation builds the operation of Argo CD's rollback to history
// entry h: its revision(s) and source(s), the spec's sync options, the
// apply strategy (no hooks). Refused with Argo CD's message while automated
// sync is on, and while the Application is being deleted.
func RollbackOperation(a *argov1.Application, h *argov1.RevisionHistory, prune, dryRun bool, username string) (*argov1.Operation, error) {
	if a.DeletionTimestamp != nil {
		return nil, errors.New("application is deleting")
	}
	if a.IsAutomated() {
		return nil, errors.New("rollback cannot be initiated when auto-sync is enabled")
	}
	if h.Source.RepoURL == "" && len(h.Sources) == 0 {
		return nil, fmt.Errorf("history entry %d records no source: sync to its revision instead", h.ID)
	}
	op := &argov1.Operation{
		Sync: &argov1.SyncOperation{
			Revision: h.Revision, Revisions: h.Revisions, Prune: prune, DryRun: dryRun,
			SyncOptions:  a.GetSyncOptions(),
			SyncStrategy: &argov1.SyncStrategy{Apply: &argov1.SyncStrategyApply{}},
			Sources:      h.Sources,
		},
		InitiatedBy: argov1.OperationInitiator{Username: username},
	}
	if len(h.Sources) == 0 {
		op.Sync.Source = h.Source.DeepCopy()
	}
	return op, nil
}

// OperationPatch is the JSON merge patch that requests op on a: the
// operation field set, status.operationState cleared (as Argo CD does when
// it sets an operation), and a's resourceVersion, so that the patch fails
// with a conflict when the Application changed since it was read (another
// operation may have been set meanwhile). ErrOperationInProgress when a
// already has an operation.
func OperationPatch(a *argov1.Application, op *argov1.Operation) ([]byte, error) {
	if a.Operation != nil {
		return nil, ErrOperationInProgress
	}
	return json.Marshal(map[string]any{
		"metadata":  map[string]any{"resourceVersion": a.ResourceVersion},
		"operation": op,
		"status":    map[string]any{"operationState": nil},
	})
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
