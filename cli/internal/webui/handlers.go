package webui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/pkg/ssa"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// api serves /api/ with the store.
type api struct {
	s      *Server
	st     *store
	hub    *hub
	client client.Client // typed reads with the user's credentials (tree, diff)

	mu        sync.Mutex
	patchable map[string]permission // mayPatch's answers by Kind/namespace
}

// handler starts the store and builds the routes.
func (s *Server) handler(ctx context.Context) (http.Handler, error) {
	static, err := staticFiles()
	if err != nil {
		return nil, err
	}
	h := newHub()
	st, err := newStore(ctx, s.opts.Config, h, s.opts.Namespaces)
	if err != nil {
		return nil, err
	}
	st.log = s.log
	s.st = st
	a := &api{s: s, st: st, hub: h, patchable: map[string]permission{}}
	if a.client, err = client.New(s.opts.Config, client.Options{Scheme: scheme.New(), Mapper: st.mapper}); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", static)
	mux.HandleFunc("GET /api/session", a.session)
	mux.HandleFunc("GET /api/objects", a.objects)
	mux.HandleFunc("GET /api/object/{kind}/{namespace}/{name}", a.object)
	mux.HandleFunc("GET /api/tree/{kind}/{namespace}/{name}", a.tree)
	mux.HandleFunc("GET /api/drift", a.drift)
	mux.HandleFunc("GET /api/graph", a.graph)
	mux.HandleFunc("GET /api/yaml", a.yaml)
	mux.HandleFunc("GET /api/diff/{namespace}/{name}", a.diff)
	mux.HandleFunc("GET /api/stream", a.stream)
	mux.HandleFunc("GET /api/app/{namespace}/{name}", a.app)
	if !s.opts.ReadOnly {
		mux.HandleFunc("POST /api/action/{verb}", a.action)
		mux.HandleFunc("POST /api/app/{namespace}/{name}/sync", a.appSync)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+r.URL.Path)
	})
	return s.secure(mux), nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// notReadable is the one answer for an object that does not exist and one
// the user may not read: the page cannot tell them apart, nor should it.
const notReadable = "not found, or not readable with your permissions"

func (a *api) session(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, Session{CSRFToken: a.s.csrf, User: a.st.user, ReadOnly: a.s.opts.ReadOnly, Context: a.s.opts.Context, Server: a.s.opts.Config.Host})
}

func (a *api) objects(w http.ResponseWriter, _ *http.Request) {
	objs := a.st.list()
	out := Objects{Objects: make([]Summary, 0, len(objs)), Apps: a.appSummaries(), Connected: a.st.status().Connected, Hidden: a.st.hidden}
	for _, u := range objs {
		out.Objects = append(out.Objects, summarize(u))
	}
	writeJSON(w, out)
}

func nsParam(r *http.Request) string {
	ns := r.PathValue("namespace")
	if ns == "_" { // cluster-scoped; no Flux kind is, but the route allows it
		return ""
	}
	return ns
}

func (a *api) object(w http.ResponseWriter, r *http.Request) {
	kind, ns, name := r.PathValue("kind"), nsParam(r), r.PathValue("name")
	if k, ok := kinds.ByKind(kind); ok && k.ArgoCD {
		writeError(w, http.StatusBadRequest, "an Application is read at /api/app/{namespace}/{name}")
		return
	}
	u := a.st.get(kind, ns, name)
	if u == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	d := Detail{Summary: summarize(u), Conditions: conditions(u), History: history(u), Annotations: u.GetAnnotations()}
	d.Artifact = artifactOf(u)
	d.LastAppliedRevision, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	d.LastAttemptedRevision, _, _ = unstructured.NestedString(u.Object, "status", "lastAttemptedRevision")
	d.Spec, _, _ = unstructured.NestedMap(u.Object, "spec")
	d.Events = []Event{}
	for _, ev := range a.st.eventsOf(kind, ns, name) {
		d.Events = append(d.Events, eventOf(ev, false))
	}
	d.CanPatch = a.mayPatch(r.Context(), kind, ns)
	d.Image = imageChain(a.st, u)
	ref := d.Summary.SourceRef
	if hc := helmChartOf(u); hc != nil && a.st.get(hc.Kind, hc.Namespace, hc.Name) != nil {
		ref = hc // a HelmRelease's chart is built in its HelmChart: its artifact is the release's source
	}
	if ref != nil {
		if src := a.st.get(ref.Kind, ref.Namespace, ref.Name); src != nil {
			sum := summarize(src)
			d.Source, d.SourceArtifact = &sum, artifactOf(src)
			for _, ev := range a.st.eventsOf(ref.Kind, ref.Namespace, ref.Name) {
				d.Events = append(d.Events, eventOf(ev, true))
			}
		}
	}
	sortEvents(d.Events)
	writeJSON(w, d)
}

// artifactOf is the artifact of a source (sourcev1.Source), nil for
// another kind or a source without one.
func artifactOf(u *unstructured.Unstructured) *Artifact {
	_, o, ok := typed(u)
	src, isSource := o.(sourcev1.Source)
	if !ok || !isSource || src.GetArtifact() == nil {
		return nil
	}
	sa := src.GetArtifact()
	a := &Artifact{Revision: sa.Revision, Digest: sa.Digest, URL: sa.URL}
	if !sa.LastUpdateTime.IsZero() {
		t := sa.LastUpdateTime.UTC()
		a.LastUpdateTime = &t
	}
	if sa.Size != nil {
		a.Size = *sa.Size
	}
	return a
}

func eventOf(ev corev1.Event, source bool) Event {
	io := ev.InvolvedObject
	return Event{Object: Ref{APIVersion: io.APIVersion, Kind: io.Kind, Namespace: io.Namespace, Name: io.Name},
		Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Time: status.EventTime(ev), Count: max(ev.Count, 1), Source: source}
}

// sortEvents orders events newest first.
func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int { return b.Time.Compare(a.Time) })
}

func (a *api) graph(w http.ResponseWriter, _ *http.Request) {
	g := Graph{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	ids := map[string]bool{}
	id := func(r Ref) string { return r.Kind + "/" + r.Namespace + "/" + r.Name }
	var sums []Summary
	for _, u := range a.st.list() {
		s := summarize(u)
		if k, ok := kinds.ByKind(s.Kind); !ok || (!k.Source && !k.Applier && !k.Image) {
			continue // notification objects are not in the delivery graph
		}
		sums = append(sums, s)
		ids[id(s.Ref)] = true
		g.Nodes = append(g.Nodes, GraphNode{ID: id(s.Ref), Ref: s.Ref, State: s.State})
	}
	for _, s := range sums {
		u := a.st.get(s.Kind, s.Namespace, s.Name)
		src := s.SourceRef
		if hc := helmChartOf(u); hc != nil && ids[id(*hc)] {
			src = hc // GitRepository → HelmChart → HelmRelease
		}
		if src != nil && ids[id(*src)] {
			g.Edges = append(g.Edges, GraphEdge{From: id(*src), To: id(s.Ref), Type: "source"})
		}
		for _, from := range imageInputs(a.st, u) { // ImageRepository → ImagePolicy → ImageUpdateAutomation
			if ids[id(from)] {
				g.Edges = append(g.Edges, GraphEdge{From: id(from), To: id(s.Ref), Type: "source"})
			}
		}
		for _, d := range s.DependsOn {
			if ids[id(d)] {
				g.Edges = append(g.Edges, GraphEdge{From: id(d), To: id(s.Ref), Type: "dependsOn"})
			}
		}
		if s.Kind == kustomizev1.KustomizationKind { // a HelmRelease's children are its chart's, as in inspect.Tree
			for _, child := range appliedFluxObjects(u) {
				if ids[id(child)] {
					g.Edges = append(g.Edges, GraphEdge{From: id(s.Ref), To: id(child), Type: "applies"})
				}
			}
		}
	}
	writeJSON(w, g)
}

// yaml reads any object live (not from the cache: inventory objects are
// not watched), with the user's credentials.
func (a *api) yaml(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	gv, err := schema.ParseGroupVersion(q.Get("apiVersion"))
	if err != nil || q.Get("kind") == "" || q.Get("name") == "" {
		writeError(w, http.StatusBadRequest, "want apiVersion, kind, name and (for namespaced kinds) namespace")
		return
	}
	u, err := a.getLive(r.Context(), gv.WithKind(q.Get("kind")), q.Get("namespace"), q.Get("name"))
	if err != nil {
		a.liveError(w, err)
		return
	}
	redactSecret(u)
	out := YAML{Ref: refOf(u)}
	if mf := u.GetManagedFields(); len(mf) > 0 {
		b, _ := yaml.Marshal(map[string]any{"managedFields": mf})
		out.ManagedFields = string(b)
		u.SetManagedFields(nil)
	}
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "rendering YAML: "+err.Error())
		return
	}
	out.YAML = string(b)
	writeJSON(w, out)
}

func (a *api) getLive(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	m, err := a.st.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	ri := a.st.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}

func (a *api) liveError(w http.ResponseWriter, err error) {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
		writeError(w, http.StatusNotFound, notReadable)
	default:
		writeError(w, http.StatusBadGateway, "the API server: "+err.Error())
	}
}

// stream sends server-sent events: the connection status first, then every
// change, and a comment every 15 s so proxies keep the connection open.
func (a *api) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	c := a.hub.subscribe()
	defer a.hub.unsubscribe(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	st, _ := json.Marshal(a.st.status())
	fmt.Fprintf(w, "retry: 2000\nevent: status\ndata: %s\n\n", st)
	fl.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg := <-c:
			_, err := w.Write(msg)
			for more := true; more && err == nil; { // coalesce a burst into one flush
				select {
				case m := <-c:
					_, err = w.Write(m)
				default:
					more = false
				}
			}
			if err != nil {
				return
			}
			fl.Flush()
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func (a *api) action(w http.ResponseWriter, r *http.Request) {
	if !a.s.checkCSRF(r) {
		writeError(w, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
		return
	}
	var act Action
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&act); err != nil {
		writeError(w, http.StatusBadRequest, "want a JSON body {kind, namespace, name}")
		return
	}
	k, ok := a.st.kindOf(act.Kind)
	if !ok || k.ArgoCD {
		// An Application is synced (its operation field), not reconciled
		// or suspended: POST /api/app/{namespace}/{name}/sync.
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a Flux kind", act.Kind))
		return
	}
	if a.st.get(act.Kind, act.Namespace, act.Name) == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	ctx := r.Context()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var msg, reason string
	var err error
	switch verb := r.PathValue("verb"); verb {
	case "reconcile":
		if act.WithSource {
			if src := a.withSource(act.Ref); src != nil {
				if err = a.annotate(ctx, *src, now); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = a.annotate(ctx, act.Ref, now)
		}
		reason, msg = "ReconcileRequested", "reconcile requested"
		if act.WithSource {
			msg = "reconcile with source requested"
		}
	case "suspend", "resume":
		// As flux (and eddy suspend/resume): suspend sets spec.suspend,
		// resume removes it and asks for a reconcile at once.
		suspend := verb == "suspend"
		patch := map[string]any{"spec": map[string]any{"suspend": true}}
		if !suspend {
			patch = map[string]any{"spec": map[string]any{"suspend": nil},
				"metadata": map[string]any{"annotations": map[string]string{fluxmeta.ReconcileRequestAnnotation: now}}}
		}
		err = a.patch(ctx, k, act.Ref, patch)
		reason, msg = "Suspended", "suspended"
		if !suspend {
			reason, msg = "Resumed", "resumed"
		}
	default:
		writeError(w, http.StatusNotFound, "no such action: "+verb)
		return
	}
	if err != nil {
		code := http.StatusBadGateway
		if apierrors.IsForbidden(err) {
			code = http.StatusForbidden
		}
		writeError(w, code, fmt.Sprintf("%s %s/%s/%s: %v", r.PathValue("verb"), act.Kind, act.Namespace, act.Name, apiMessage(err)))
		return
	}
	by := a.st.user
	if by == "" {
		by = "an unknown user"
	}
	msg = fmt.Sprintf("%s by %s in eddy ui", msg, by)
	if err := a.recordEvent(ctx, act.Ref, reason, msg); err != nil {
		msg += " (not recorded as an event: " + apiMessage(err) + ")"
	}
	writeJSON(w, ActionResult{Message: msg})
}

// withSource is what `flux reconcile --with-source` reconciles first: a
// Kustomization's source, a HelmRelease's HelmChart (status.helmChart) or
// chartRef.
func (a *api) withSource(r Ref) *Ref {
	u := a.st.get(r.Kind, r.Namespace, r.Name)
	if u == nil {
		return nil
	}
	if hc := helmChartOf(u); hc != nil {
		return hc
	}
	return sourceRefOf(u)
}

func (a *api) annotate(ctx context.Context, r Ref, at string) error {
	k, ok := a.st.kindOf(r.Kind)
	if !ok {
		return fmt.Errorf("%q is not a Flux kind", r.Kind)
	}
	return a.patch(ctx, k, r, map[string]any{"metadata": map[string]any{"annotations": map[string]string{fluxmeta.ReconcileRequestAnnotation: at}}})
}

func (a *api) patch(ctx context.Context, k fluxKind, r Ref, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = a.st.dyn.Resource(k.GVR).Namespace(r.Namespace).Patch(ctx, r.Name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "eddy-ui"})
	return err
}

// recordEvent records an action on the object as a core/v1 Event naming
// the user, created with the user's credentials.
func (a *api) recordEvent(ctx context.Context, r Ref, reason, msg string) error {
	u := a.st.get(r.Kind, r.Namespace, r.Name) // the informer's copy: its uid is the object's
	if u == nil {
		return errors.New("the object is gone")
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: r.Name + ".", Namespace: r.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(),
			Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "eddy-ui"}, ReportingController: "eddy.dev/ui",
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	_, err := a.st.kube.CoreV1().Events(r.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// apiMessage is the API server's message without client-go's wrapping.
func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Message
	}
	return err.Error()
}

// helmChartOf is the HelmChart a HelmRelease's chart is built in
// (status.helmChart `<namespace>/<name>`), nil for other kinds.
func helmChartOf(u *unstructured.Unstructured) *Ref {
	if u == nil || u.GetKind() != "HelmRelease" {
		return nil
	}
	hc, _, _ := unstructured.NestedString(u.Object, "status", "helmChart")
	ns, name, ok := strings.Cut(hc, "/")
	if !ok || strings.Contains(name, "/") {
		return nil
	}
	return &Ref{Kind: "HelmChart", Namespace: ns, Name: name}
}

// appliedFluxObjects are the appliers (kinds.Kind Applier: Kustomizations,
// HelmReleases) in a Kustomization's inventory.
func appliedFluxObjects(u *unstructured.Unstructured) []Ref {
	if u == nil {
		return nil
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	var out []Ref
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		o, err := ssa.ParseID(str(m, "id"))
		if err != nil {
			continue
		}
		if k, ok := kinds.ByGroupKind(o.GroupKind); ok && k.Applier {
			out = append(out, Ref{Kind: o.GroupKind.Kind, Namespace: o.Namespace, Name: o.Name})
		}
	}
	return out
}

// redactSecret replaces a Secret's values with their size, as Argo CD's
// UI does: a page is easily shared, screenshotted or cached, and the values
// are one `kubectl get` away for whoever may read them. kubectl's
// last-applied-configuration annotation holds them too.
func redactSecret(u *unstructured.Unstructured) {
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok, _ := unstructured.NestedMap(u.Object, field)
		if !ok {
			continue
		}
		for k, v := range m {
			sv := fmt.Sprint(v)
			n := len(sv)
			if b, err := base64.StdEncoding.DecodeString(sv); field == "data" && err == nil {
				n = len(b)
			}
			m[k] = fmt.Sprintf("(redacted: %d bytes)", n)
		}
		_ = unstructured.SetNestedMap(u.Object, m, field)
	}
	if a := u.GetAnnotations(); a["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		a["kubectl.kubernetes.io/last-applied-configuration"] = "(redacted: it holds the Secret's values)"
		u.SetAnnotations(a)
	}
}

// mayPatch asks the API server whether the user may patch objects of kind
// in namespace (what reconcile, suspend and resume do). An answer stands
// for a minute: the page asks on every refresh, permissions rarely change.
func (a *api) mayPatch(ctx context.Context, kind, namespace string) bool {
	key := kind + "/" + namespace
	a.mu.Lock()
	p, ok := a.patchable[key]
	a.mu.Unlock()
	if ok && time.Since(p.at) < time.Minute {
		return p.allowed
	}
	k, ok := a.st.kindOf(kind)
	if !ok {
		return false
	}
	r, err := a.st.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: namespace, Verb: "patch", Group: k.GVR.Group, Resource: k.GVR.Resource}}}, metav1.CreateOptions{})
	if err != nil {
		return false // not remembered: asked again next time
	}
	a.mu.Lock()
	a.patchable[key] = permission{allowed: r.Status.Allowed, at: time.Now()}
	a.mu.Unlock()
	return r.Status.Allowed
}

type permission struct {
	allowed bool
	at      time.Time
}
