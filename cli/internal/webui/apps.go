package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/cli/internal/app"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// typedApp converts the informer's copy of an Application; false when its
// content does not convert.
func typedApp(u *unstructured.Unstructured) (*argov1.Application, bool) {
	a := &argov1.Application{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, a); err != nil {
		return nil, false
	}
	return a, true
}

// appSummaries are the watched Applications, by namespace and name; an
// empty list when none (or the kind is hidden).
func (a *api) appSummaries() []AppSummary {
	out := []AppSummary{}
	for _, u := range a.st.listKind(argov1.ApplicationKind) {
		if ap, ok := typedApp(u); ok {
			out = append(out, appSummary(ap))
		}
	}
	return out
}

// appSummary is an Application's overview row: the columns of `argocd app
// list` (cli/internal/app builds them the same way for `eddy get apps`).
func appSummary(a *argov1.Application) AppSummary {
	src := app.Source(a)
	s := AppSummary{
		Ref:     Ref{APIVersion: argov1.GroupVersion.String(), Kind: argov1.ApplicationKind, Namespace: a.Namespace, Name: a.Name},
		Project: a.GetProject(), Sync: a.Status.Sync.Status, Health: a.Status.Health.Status, HealthMessage: a.Status.Health.Message,
		SyncPolicy: app.SyncPolicy(a), Revision: a.Status.Sync.Revision,
		RepoURL: src.RepoURL, Path: src.Path, TargetRevision: src.TargetRevision,
		DestServer: app.Server(a), DestNamespace: a.Spec.Destination.Namespace,
		Conditions: app.ConditionsSummary(a), Operating: a.Operation != nil,
	}
	if len(a.Status.Sync.Revisions) > 0 && s.Revision == "" {
		s.Revision = strings.Join(a.Status.Sync.Revisions, ", ")
	}
	if st := a.Status.OperationState; st != nil {
		s.OperationPhase = st.Phase
	}
	return s
}

// appDetail is an Application's page: what `argocd app get`, `app
// history` and `app diff` print, as data.
func appDetail(a *argov1.Application) AppDetail {
	d := AppDetail{Summary: appSummary(a), SyncStatus: app.SyncStatus(a), DestName: a.Spec.Destination.Name,
		SyncOptions: a.GetSyncOptions(), Resources: []AppResource{}, History: []AppHistory{}, Conditions: []AppCondition{}, Diff: []AppDiffObject{}}
	if p := a.Spec.SyncPolicy; p != nil {
		d.SelfHeal = a.IsAutomated() && p.Automated.IsSelfHeal()
	}
	for _, s := range a.GetSources() {
		d.Sources = append(d.Sources, AppSource{RepoURL: s.RepoURL, Path: s.Path, Chart: s.Chart, TargetRevision: s.TargetRevision, Ref: s.Ref})
	}
	for _, r := range app.ResourceStates(a) {
		d.Resources = append(d.Resources, AppResource{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: r.Status, Health: r.Health, Hook: r.Hook, Message: r.Message})
	}
	d.History = appHistory(a.Status.History)
	for _, c := range a.Status.Conditions {
		ac := AppCondition{Type: c.Type, Message: c.Message}
		if c.LastTransitionTime != nil {
			t := c.LastTransitionTime.Time
			ac.LastTransitionTime = &t
		}
		d.Conditions = append(d.Conditions, ac)
	}
	d.Operation = appOperation(a.Status.OperationState)
	objs, err := app.PendingDiff(a)
	if err != nil {
		d.DiffError = err.Error()
	}
	for _, o := range objs {
		do := AppDiffObject{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Fields: []AppDiffField{}}
		for _, f := range o.Fields {
			do.Fields = append(do.Fields, AppDiffField{Path: f.Path, Live: compactJSON(f.Live), Desired: compactJSON(f.Desired), Manager: f.Manager})
		}
		d.Diff = append(d.Diff, do)
	}
	return d
}

// appHistory lists status.history (stored oldest first, argocd-contract
// §2) newest first, as Argo CD's UI does, one row per source of a
// multi-source entry, with the REVISION of `argocd app history` (target,
// then the commit's first 7 digits in parentheses); InitiatedBy is the
// username, or "automated".
func appHistory(hist []argov1.RevisionHistory) []AppHistory {
	out := []AppHistory{}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		by := h.InitiatedBy.Username
		if h.InitiatedBy.Automated {
			by = "automated"
		}
		add := func(src argov1.ApplicationSource, rev string) {
			r := src.TargetRevision
			if len(rev) >= 7 {
				r = strings.TrimSpace(fmt.Sprintf("%s (%s)", r, rev[:7]))
			}
			out = append(out, AppHistory{ID: h.ID, DeployedAt: h.DeployedAt.Time, RepoURL: src.RepoURL, Revision: r, InitiatedBy: by})
		}
		if len(h.Sources) == 0 {
			add(h.Source, h.Revision)
			continue
		}
		for j, s := range h.Sources {
			rev := ""
			if len(h.Revisions) == len(h.Sources) {
				rev = h.Revisions[j]
			}
			add(s, rev)
		}
	}
	return out
}

func appOperation(st *argov1.OperationState) *AppOperation {
	if st == nil {
		return nil
	}
	op := &AppOperation{Phase: st.Phase, Message: st.Message, StartedAt: st.StartedAt.Time, InitiatedBy: st.Operation.InitiatedBy.Username}
	if st.Operation.InitiatedBy.Automated {
		op.InitiatedBy = "automated"
	}
	if st.FinishedAt != nil {
		t := st.FinishedAt.Time
		op.FinishedAt = &t
	}
	if r := st.SyncResult; r != nil {
		op.Revision = r.Revision
		if len(r.Sources) > 0 && len(r.Revisions) > 0 {
			op.Revision = strings.Join(r.Revisions, ", ")
		}
	}
	return op
}

// compactJSON is v as compact JSON; "" for no value.
func compactJSON(v json.RawMessage) string {
	if v == nil {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// app serves GET /api/app/{namespace}/{name}.
func (a *api) app(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	u := a.st.get(argov1.ApplicationKind, ns, name)
	if u == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	ap, ok := typedApp(u)
	if !ok {
		writeError(w, http.StatusInternalServerError, "the Application does not read as argoproj.io/v1alpha1")
		return
	}
	d := appDetail(ap)
	d.Events = []Event{}
	for _, ev := range a.st.eventsOf(argov1.ApplicationKind, ns, name) {
		d.Events = append(d.Events, eventOf(ev, false))
	}
	sortEvents(d.Events)
	d.CanSync = !a.s.opts.ReadOnly && a.mayPatch(r.Context(), argov1.ApplicationKind, ns)
	writeJSON(w, d)
}

// appSync serves POST /api/app/{namespace}/{name}/sync: it writes the
// operation `eddy app sync` writes (app.SyncOperation, app.OperationPatch:
// Argo CD's API server's sync request, the operation field of
// argocd-contract §3.1), as the user, read anew after a conflict. 409
// while another operation is in progress (Argo CD refuses to replace one),
// 403 when the user may not patch the Application, 400 when SyncOperation
// refuses (the Application is being deleted).
func (a *api) appSync(w http.ResponseWriter, r *http.Request) {
	if !a.s.checkCSRF(r) {
		writeError(w, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
		return
	}
	var req AppSync
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "want a JSON body {prune, dryRun}")
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if a.st.get(argov1.ApplicationKind, ns, name) == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	by := a.st.user
	if by == "" {
		by = "eddy-ui"
	}
	err := a.requestSync(r, types.NamespacedName{Namespace: ns, Name: name}, app.SyncRequest{Prune: req.Prune, DryRun: req.DryRun, Username: by})
	if err != nil {
		code := http.StatusBadGateway
		switch {
		case errors.Is(err, app.ErrOperationInProgress):
			code = http.StatusConflict
		case apierrors.IsForbidden(err):
			code = http.StatusForbidden
		case apierrors.IsNotFound(err):
			code = http.StatusNotFound
		case !isAPIError(err):
			code = http.StatusBadRequest // refused by SyncOperation (deleting, auto-sync)
		}
		writeError(w, code, fmt.Sprintf("sync %s/%s: %s", ns, name, apiMessage(err)))
		return
	}
	msg := fmt.Sprintf("sync requested by %s in eddy ui", by)
	if req.Prune {
		msg = fmt.Sprintf("sync (prune) requested by %s in eddy ui", by)
	}
	if req.DryRun {
		msg = fmt.Sprintf("dry-run sync requested by %s in eddy ui", by)
	}
	if err := a.recordEvent(r.Context(), Ref{Kind: argov1.ApplicationKind, Namespace: ns, Name: name}, "OperationRequested", msg); err != nil {
		msg += " (not recorded as an event: " + apiMessage(err) + ")"
	}
	writeJSON(w, ActionResult{Message: msg})
}

// requestSync reads the Application live and patches its operation field;
// after a conflict (the Application changed meanwhile) it reads again, at
// most five times.
func (a *api) requestSync(r *http.Request, key types.NamespacedName, req app.SyncRequest) error {
	ctx := r.Context()
	var err error
	for range 5 {
		ap := &argov1.Application{}
		if err = a.client.Get(ctx, key, ap); err != nil {
			return err
		}
		var op *argov1.Operation
		if op, err = app.SyncOperation(ap, req); err != nil {
			return err
		}
		var patch []byte
		if patch, err = app.OperationPatch(ap, op); err != nil {
			return err
		}
		err = a.client.Patch(ctx, ap, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("eddy-ui"))
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// isAPIError is true of an error the API server answered.
func isAPIError(err error) bool {
	var se apierrors.APIStatus
	return errors.As(err, &se)
}
