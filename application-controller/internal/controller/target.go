package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/render"
	"github.com/eddyops/eddy/application-controller/internal/source"
	"github.com/eddyops/eddy/application-controller/internal/tracking"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// target is the desired state of an Application at resolved revisions:
// every rendered object, namespaced and stamped with the tracking id.
type target struct {
	sources     []argov1.ApplicationSource
	revisions   []string
	sourceTypes []string
	objects     []*unstructured.Unstructured
	// repeated has "<group>/<Kind>/<namespace>/<name>" once for each
	// repetition of an object after its first.
	repeated []string
}

// errPending is a source whose artifact source-controller has not made yet.
var errPending = errors.New("source pending")

// loadTarget fetches and renders sources at revisions ("" each: the
// targetRevision). The error is errPending while a source is being
// fetched, else a ComparisonError message in Argo CD's words: a source
// whose last fetch failed (wrong credentials, an unknown revision) is
// one, with source-controller's secret-free message.
func (r *ApplicationReconciler) loadTarget(ctx context.Context, app *argov1.Application, sources []argov1.ApplicationSource, revisions []string) (*target, error) {
	t := &target{sources: sources}
	fetched := make([]*source.Fetched, len(sources))
	refRoots := map[string]string{}
	for i, src := range sources {
		rev := ""
		if i < len(revisions) {
			rev = revisions[i]
		}
		f, err := r.Sources.Ensure(ctx, app, src, rev)
		var nr *source.NotReady
		switch {
		case errors.As(err, &nr) && !nr.Stalled && nr.Message == "":
			return nil, errPending
		case errors.As(err, &nr) && !nr.Stalled && !nr.Failed:
			return nil, fmt.Errorf("%w: %s", errPending, nr.Message)
		case err != nil:
			return nil, fmt.Errorf("Failed to load target state: failed to generate manifest for source %d of %d: %s", i+1, len(sources), err.Error())
		}
		if msg := r.fetchFailure(ctx, src, f.Object); msg != "" {
			return nil, fmt.Errorf("Failed to load target state: failed to generate manifest for source %d of %d: %s", i+1, len(sources), msg)
		}
		fetched[i] = f
		t.revisions = append(t.revisions, f.Revision)
		if src.Ref != "" {
			refRoots["$"+src.Ref] = f.Dir
		}
	}
	for i, src := range sources {
		if src.Ref != "" && src.Path == "" && src.Chart == "" {
			continue // a ref source without a path renders nothing
		}
		res, err := r.render(ctx, app, src, fetched[i], refRoots)
		if err != nil {
			return nil, fmt.Errorf("Failed to load target state: failed to generate manifest for source %d of %d: %s", i+1, len(sources), err.Error())
		}
		t.sourceTypes = append(t.sourceTypes, res.SourceType)
		t.objects = append(t.objects, res.Objects...)
	}
	if err := r.normalizeTarget(app, t); err != nil {
		return nil, err
	}
	return t, nil
}

// fetchFailure is the Ready message of src's source object when its
// last fetch failed (Ready False for its generation) though an older
// artifact is still served: Argo CD compares nothing when it cannot
// fetch the target revision (argocd-contract §2, ComparisonError), so a
// repository whose credentials went wrong says so instead of comparing
// the old commit. "" otherwise.
func (r *ApplicationReconciler) fetchFailure(ctx context.Context, src argov1.ApplicationSource, name string) string {
	kinds := source.Kinds(src)
	obj := r.sourceObjectNamed(ctx, src, name)
	if obj == nil {
		return ""
	}
	for _, c := range obj.GetConditions() {
		if c.Type == "Ready" && c.Status == metav1.ConditionFalse && (c.ObservedGeneration == 0 || c.ObservedGeneration == obj.GetGeneration()) {
			return fmt.Sprintf("%s %s is not ready: %s", kinds[len(kinds)-1], obj.GetName(), c.Message)
		}
	}
	return ""
}

// sourceObject reads (cached) the source object that holds app's src's
// artifact (named for app's credential scope, as Ensure names it); nil
// when there is none yet.
func (r *ApplicationReconciler) sourceObject(ctx context.Context, app *argov1.Application, src argov1.ApplicationSource, rev string) sourceObject {
	name, err := r.Sources.ObjectNameFor(ctx, app, src, rev)
	if err != nil {
		return nil
	}
	return r.sourceObjectNamed(ctx, src, name)
}

// sourceObjectNamed reads (cached) the source object name of src's kind;
// nil when there is none.
func (r *ApplicationReconciler) sourceObjectNamed(ctx context.Context, src argov1.ApplicationSource, name string) sourceObject {
	kinds := source.Kinds(src)
	var obj sourceObject
	switch kinds[len(kinds)-1] {
	case sourcev1.GitRepositoryKind:
		obj = &sourcev1.GitRepository{}
	case sourcev1.HelmChartKind:
		obj = &sourcev1.HelmChart{}
	case sourcev1.OCIRepositoryKind:
		obj = &sourcev1.OCIRepository{}
	default:
		return nil
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, obj); err != nil {
		return nil
	}
	return obj
}

// sourceObject is what the controller reads of a source object.
type sourceObject interface {
	client.Object
	GetConditions() []metav1.Condition
	GetLastHandledReconcileRequest() string
}

// render renders one source, from the cache when the same artifact was
// rendered with the same inputs.
func (r *ApplicationReconciler) render(ctx context.Context, app *argov1.Application, src argov1.ApplicationSource, f *source.Fetched, refRoots map[string]string) (*render.Result, error) {
	in := render.Input{
		Root: f.Dir, Source: src, AppName: app.Name, AppNamespace: app.Namespace, Project: app.GetProject(),
		Namespace: app.Spec.Destination.Namespace, Revision: f.Revision,
		KubeVersion: r.KubeVersion, APIVersions: r.APIVersions, RefRoots: refRoots,
	}
	digest := ""
	if f.Artifact != nil {
		digest = f.Artifact.Digest
	}
	key := renderKey(in, digest)
	if res, ok := r.renders.get(key); ok {
		return res, nil
	}
	if r.renders.timedOut(key) {
		return nil, renderTimeoutError(r.RenderTimeout)
	}
	rctx := ctx
	if r.RenderTimeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, r.RenderTimeout)
		defer cancel()
	}
	res, err := render.Render(rctx, in)
	if errors.Is(err, render.ErrTimeout) {
		// The render goes on in the background: it is not started again
		// for the same inputs, which a new commit or spec change alters.
		r.renders.markTimedOut(key)
		return nil, renderTimeoutError(r.RenderTimeout)
	}
	if err != nil {
		return nil, err
	}
	r.renders.put(key, res)
	return copyResult(res), nil
}

// renderTimeoutError is the ComparisonError of a render that did not end.
func renderTimeoutError(d time.Duration) error {
	return fmt.Errorf("%w within %s (--repo-server-timeout-seconds); it is not tried again until the source or the Application changes", render.ErrTimeout, d)
}

func renderKey(in render.Input, digest string) string {
	in.Root = ""
	refs := in.RefRoots
	in.RefRoots = nil
	b, _ := json.Marshal(struct {
		In     render.Input
		Refs   map[string]string
		Digest string
	}{in, refs, digest})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// normalizeTarget gives namespaced objects without a namespace the
// destination's and clears it on cluster-scoped ones (argocd-contract
// §1.8), drops duplicates (the last wins, RepeatedResourceWarning) and
// stamps the tracking id (§5).
func (r *ApplicationReconciler) normalizeTarget(app *argov1.Application, t *target) error {
	crdScopes := crdScopes(t.objects)
	dest := app.Spec.Destination.Namespace
	seen := map[string]int{}
	var out []*unstructured.Unstructured
	for _, u := range t.objects {
		switch r.namespaced(u.GroupVersionKind(), crdScopes) {
		case scopeCluster:
			u.SetNamespace("")
		case scopeNamespaced:
			if u.GetNamespace() == "" {
				if dest == "" {
					return &specError{fmt.Sprintf("Namespace for %s %s is missing.", u.GetName(), u.GroupVersionKind())}
				}
				u.SetNamespace(dest)
			}
		}
		k := plan.Key(u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())
		if i, ok := seen[k]; ok && u.GetName() != "" {
			out[i] = u
			t.repeated = append(t.repeated, fmt.Sprintf("%s/%s/%s/%s", u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName()))
			continue
		}
		seen[k] = len(out)
		out = append(out, u)
	}
	t.objects = out
	tracking.Stamp(t.objects, app.InstanceName(r.Namespace), dest, func(u *unstructured.Unstructured) bool {
		return r.namespaced(u.GroupVersionKind(), crdScopes) == scopeCluster
	})
	return nil
}

type scope int

const (
	scopeUnknown scope = iota
	scopeNamespaced
	scopeCluster
)

// namespaced is the scope of gvk from the API server, else from a CRD of
// the same set.
func (r *ApplicationReconciler) namespaced(gvk schema.GroupVersionKind, crds map[schema.GroupKind]string) scope {
	if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		if m.Scope.Name() == "namespace" {
			return scopeNamespaced
		}
		return scopeCluster
	}
	switch crds[gvk.GroupKind()] {
	case "Namespaced":
		return scopeNamespaced
	case "Cluster":
		return scopeCluster
	}
	return scopeUnknown
}

func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		k, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		s, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		out[schema.GroupKind{Group: g, Kind: k}] = s
	}
	return out
}

// renderCache keeps recent render results by their inputs and artifact.
type renderCache struct {
	mu      sync.Mutex
	entries map[string]*render.Result
	order   []string
	max     int
	// slow are the keys whose render ran out of time (markTimedOut).
	slow      map[string]bool
	slowOrder []string
}

func newRenderCache(max int) *renderCache {
	return &renderCache{entries: map[string]*render.Result{}, max: max}
}

func (c *renderCache) get(key string) (*render.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return copyResult(res), true
}

// timedOut reports whether the render of key ran out of time before.
func (c *renderCache) timedOut(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slow[key]
}

// markTimedOut remembers that the render of key ran out of time; at most
// max keys are kept, the oldest dropped first.
func (c *renderCache) markTimedOut(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slow == nil {
		c.slow = map[string]bool{}
	}
	if !c.slow[key] {
		c.slow[key] = true
		c.slowOrder = append(c.slowOrder, key)
	}
	for len(c.slowOrder) > c.max {
		delete(c.slow, c.slowOrder[0])
		c.slowOrder = c.slowOrder[1:]
	}
}

func (c *renderCache) put(key string, res *render.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = copyResult(res)
	c.order = append(c.order, key)
	for len(c.order) > c.max {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

func copyResult(res *render.Result) *render.Result {
	out := &render.Result{SourceType: res.SourceType, Objects: make([]*unstructured.Unstructured, len(res.Objects))}
	for i, u := range res.Objects {
		out.Objects[i] = u.DeepCopy()
	}
	return out
}

// requestSourceRefresh asks source-controller to fetch an Application's
// sources now, for the refresh annotation (argocd-contract §3.2), unless
// a fetch it was asked for is still to come (requestedAt not yet
// handled): that fetch sees the newest commit too, so many Applications
// on one repository refreshed together make one fetch.
func (r *ApplicationReconciler) requestSourceRefresh(ctx context.Context, app *argov1.Application) {
	for _, src := range app.GetSources() {
		if obj := r.sourceObject(ctx, app, src, ""); obj != nil {
			if asked := obj.GetAnnotations()[meta.ReconcileRequestAnnotation]; asked != "" && asked != obj.GetLastHandledReconcileRequest() {
				continue
			}
		}
		if err := r.Sources.Refresh(ctx, app, src, ""); err != nil {
			r.Log.V(1).Info("cannot request a fetch", "error", err.Error())
		}
	}
}
