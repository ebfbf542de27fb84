package webui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// fluxKind is one kind the UI watches.
type fluxKind struct {
	Kind string
	GVR  schema.GroupVersionResource
	// ArgoCD: an Argo CD kind (kinds.Kind ArgoCD), shown on its own
	// pages, not in the list of Flux objects.
	ArgoCD bool
}

// fluxKinds are the kinds shown (kinds.All), in the overview's order:
// sources, then appliers, then notification, then Argo CD's Application
// (for its own page and overview section). Versions are the storage
// versions.
var fluxKinds = func() []fluxKind {
	out := make([]fluxKind, 0, len(kinds.All))
	for _, k := range kinds.All {
		out = append(out, fluxKind{Kind: k.Kind, GVR: k.GVR(), ArgoCD: k.ArgoCD})
	}
	return out
}()

// kindOf is the watched kind, at the version the cluster serves.
func (s *store) kindOf(kind string) (fluxKind, bool) {
	for _, k := range s.kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return fluxKind{}, false
}

// store holds informers over the Flux kinds and their events, with the
// user's credentials. A kind the user may not list (or whose CRD is not
// installed) is hidden: absent, not an error.
type store struct {
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	hub     *hub
	mapper  meta.RESTMapper                  // the cluster's kinds, from discovery (read once)
	kinds   []fluxKind                       // fluxKinds at the versions the cluster serves
	objects map[string][]cache.GenericLister // by Kind; one per watched namespace ("" all)
	events  map[string][]cache.Indexer       // core/v1 Events, by the involved object's Kind; see eventIndexers
	hidden  []string

	mu        sync.Mutex
	connected bool
	connMsg   string
	denied    bool // a watch was refused (401/403): see deniedMessage
	log       io.Writer
	user      string
}

// servedKinds is fluxKinds, each at its listed version when the cluster
// serves it, else at its group's preferred served version (Flux before
// 2.10 serves Alert and Provider as v1beta3 only). A kind not served at
// all keeps its version: listing it then finds no CRD, and it is hidden.
func servedKinds(mapper meta.RESTMapper) []fluxKind {
	out := slices.Clone(fluxKinds)
	for i, k := range out {
		gk := schema.GroupKind{Group: k.GVR.Group, Kind: k.Kind}
		if _, err := mapper.RESTMapping(gk, k.GVR.Version); err == nil {
			continue
		}
		if m, err := mapper.RESTMapping(gk); err == nil {
			out[i].GVR = m.Resource
		}
	}
	return out
}

// newStore starts the informers and waits (at most 30 s) for their first
// list. The informers run until ctx is done. namespaces limits what is
// watched; empty: every namespace the user may list each kind in.
func newStore(ctx context.Context, cfg *rest.Config, h *hub, namespaces []string) (*store, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	s := &store{dyn: dyn, kube: kube, hub: h, mapper: mapper, kinds: servedKinds(mapper), objects: map[string][]cache.GenericLister{}, events: map[string][]cache.Indexer{}, connected: true}
	if r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		s.user = r.Status.UserInfo.Username
	}
	var synced []cache.InformerSynced
	notify := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			h.publish("change", Change{Ref: Ref{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}})
		}
	}
	notifyEvent := func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			o := ev.InvolvedObject
			h.publish("change", Change{Ref: Ref{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}})
		}
	}
	handlers := func(f func(any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, n any) { f(n) }, DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			f(o)
		}}
	}
	scopes, err := s.scopes(ctx, namespaces)
	if err != nil {
		return nil, err
	}
	for _, k := range s.kinds {
		nss := scopes[k.Kind]
		if len(nss) == 0 {
			s.hidden = append(s.hidden, k.Kind)
			continue
		}
		for _, ns := range nss {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
			inf := f.ForResource(k.GVR)
			_ = inf.Informer().SetTransform(dropManagedFields)
			_, _ = inf.Informer().AddEventHandler(handlers(notify))
			_ = inf.Informer().SetWatchErrorHandlerWithContext(s.watchError)
			s.objects[k.Kind] = append(s.objects[k.Kind], inf.Lister())
			synced = append(synced, inf.Informer().HasSynced)
			f.Start(ctx.Done())

			// Events of this kind only: an informer per kind with a field
			// selector keeps other objects' events (pods, nodes) out of memory.
			sel := "involvedObject.kind=" + k.Kind
			if _, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{Limit: 1, FieldSelector: sel}); err != nil {
				continue // events not readable: the pages show none
			}
			ef := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
			einf := ef.Core().V1().Events().Informer()
			_ = einf.SetTransform(dropManagedFields)
			if err := einf.AddIndexers(eventIndexers); err != nil {
				return nil, err
			}
			_, _ = einf.AddEventHandler(handlers(notifyEvent))
			s.events[k.Kind] = append(s.events[k.Kind], einf.GetIndexer())
			synced = append(synced, einf.HasSynced)
			ef.Start(ctx.Done())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the API server did not answer the first list within 30s")
	}
	go s.probe(ctx)
	return s, nil
}

func dropManagedFields(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// The events' indexes: by the involved object's namespace/name, and by
// reason, so that a page reads its object's events (or the drift events)
// without a scan of every event of the kind.
const (
	byObject = "object"
	byReason = "reason"
)

var eventIndexers = cache.Indexers{
	byObject: func(obj any) ([]string, error) {
		if ev, ok := obj.(*corev1.Event); ok {
			return []string{ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name}, nil
		}
		return nil, nil
	},
	byReason: func(obj any) ([]string, error) {
		if ev, ok := obj.(*corev1.Event); ok {
			return []string{ev.Reason}, nil
		}
		return nil, nil
	},
}

// watchError marks the cluster unreachable; probe marks it back.
func (s *store) watchError(_ context.Context, _ *cache.Reflector, err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return // a normal relist
	}
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		// The server answers, but no longer to these credentials: what
		// the page shows may be stale until the UI reads anew.
		s.mu.Lock()
		s.denied = true
		s.mu.Unlock()
		s.setConnected(false, deniedMessage)
		return
	}
	s.setConnected(false, "the API server is not reachable; reconnecting")
}

// deniedMessage is the banner once a watch is refused: permissions or
// credentials changed while the UI ran. It stays until a restart.
const deniedMessage = "the API server no longer lets you watch some of these objects (your permissions or credentials changed): restart eddy ui to see what you may read now"

// probe asks the API server for its version every 3 s, so the page learns
// within seconds that the cluster went away and came back.
func (s *store) probe(ctx context.Context) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.kube.Discovery().RESTClient().Get().AbsPath("/version").Do(pctx).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.setConnected(false, "the API server is not reachable; reconnecting")
		} else {
			s.setConnected(true, "")
		}
	}
}

func (s *store) setConnected(ok bool, msg string) {
	s.mu.Lock()
	if s.denied && ok {
		s.mu.Unlock()
		return // the probe reaching /version does not lift a refusal
	}
	if s.denied {
		msg = deniedMessage
	}
	changed := s.connected != ok || s.connMsg != msg
	s.connected, s.connMsg = ok, msg
	s.mu.Unlock()
	if changed {
		// The log line first: whoever sees the status change finds it logged.
		if s.log != nil {
			line := "connected to the API server again"
			if !ok {
				line = msg
			}
			fmt.Fprintf(s.log, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
		}
		s.hub.publish("status", Status{Connected: ok, Message: msg})
	}
}

func (s *store) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Connected: s.connected, Message: s.connMsg}
}

// list returns every watched Flux object (Argo CD's apart: listKind),
// in kind order then namespace/name, without application-controller's
// source objects (kinds.IsApplicationSource): they are its implementation;
// an Application's page shows its repository, revision and conditions.
func (s *store) list() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range s.kinds {
		if k.ArgoCD {
			continue
		}
		for _, u := range s.listKind(k.Kind) {
			if !kinds.IsApplicationSource(u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// listKind returns the watched objects of one kind, by namespace/name.
func (s *store) listKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, k := range s.kinds {
		if k.Kind != kind {
			continue
		}
		var us []*unstructured.Unstructured
		for _, l := range s.objects[k.Kind] {
			objs, _ := l.List(labels.Everything())
			for _, o := range objs {
				if u, ok := o.(*unstructured.Unstructured); ok {
					us = append(us, u)
				}
			}
		}
		sort.Slice(us, func(i, j int) bool {
			if us[i].GetNamespace() != us[j].GetNamespace() {
				return us[i].GetNamespace() < us[j].GetNamespace()
			}
			return us[i].GetName() < us[j].GetName()
		})
		out = append(out, us...)
	}
	return out
}

// get returns one object, or nil when it does not exist or its kind is
// hidden.
func (s *store) get(kind, namespace, name string) *unstructured.Unstructured {
	for _, l := range s.objects[kind] {
		var o runtime.Object
		var err error
		if namespace == "" {
			o, err = l.Get(name)
		} else {
			o, err = l.ByNamespace(namespace).Get(name)
		}
		if err == nil {
			u, _ := o.(*unstructured.Unstructured)
			return u
		}
	}
	return nil
}

// eventsOf returns the events of one object, newest first.
func (s *store) eventsOf(kind, namespace, name string) []corev1.Event {
	return s.indexedEvents(kind, byObject, namespace+"/"+name)
}

// eventsWithReason returns the events of a kind's objects with reason,
// newest first.
func (s *store) eventsWithReason(kind, reason string) []corev1.Event {
	return s.indexedEvents(kind, byReason, reason)
}

func (s *store) indexedEvents(kind, index, key string) []corev1.Event {
	var out []corev1.Event
	for _, ix := range s.events[kind] {
		objs, _ := ix.ByIndex(index, key)
		for _, o := range objs {
			if ev, ok := o.(*corev1.Event); ok {
				out = append(out, *ev)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return status.EventTime(out[i]).After(status.EventTime(out[j])) })
	return out
}

// scopes finds, per kind, the namespaces to watch: "" (all) when the user
// may list and watch the kind cluster-wide, else each namespace where they
// may (from SelfSubjectRulesReview, over the namespaces they may list or
// were given). A kind with none is hidden.
func (s *store) scopes(ctx context.Context, namespaces []string) (map[string][]string, error) {
	out := map[string][]string{}
	may := func(ns string, k fluxKind) (bool, error) {
		for _, verb := range []string{"list", "watch"} {
			r, err := s.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: k.GVR.Group, Resource: k.GVR.Resource}}}, metav1.CreateOptions{})
			if err != nil || !r.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	}
	installed := map[string]bool{}
	for _, k := range s.kinds {
		// A kind whose CRD is not installed is hidden too.
		if _, err := s.dyn.Resource(k.GVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil && apierrors.IsNotFound(err) {
			continue
		}
		installed[k.Kind] = true
	}
	if len(namespaces) == 0 {
		var rest []fluxKind
		for _, k := range s.kinds {
			if !installed[k.Kind] {
				continue
			}
			ok, err := may("", k)
			if err != nil {
				return nil, fmt.Errorf("asking the API server what you may read: %w", err)
			}
			if ok {
				out[k.Kind] = []string{metav1.NamespaceAll}
			} else {
				rest = append(rest, k)
			}
		}
		if len(rest) == 0 {
			return out, nil
		}
		nsl, err := s.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, nil // cannot tell where else to look: pass --namespace
		}
		for _, n := range nsl.Items {
			namespaces = append(namespaces, n.Name)
		}
		return out, s.rules(ctx, out, rest, namespaces)
	}
	var kinds []fluxKind
	for _, k := range s.kinds {
		if installed[k.Kind] {
			kinds = append(kinds, k)
		}
	}
	return out, s.rules(ctx, out, kinds, namespaces)
}

// rules adds to out each namespace in which the user may list and watch
// each kind, from one SelfSubjectRulesReview per namespace.
func (s *store) rules(ctx context.Context, out map[string][]string, kinds []fluxKind, namespaces []string) error {
	for _, ns := range namespaces {
		r, err := s.kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("asking the API server what you may read in %s: %w", ns, err)
		}
		for _, k := range kinds {
			if allows(r.Status.ResourceRules, k.GVR, "list") && allows(r.Status.ResourceRules, k.GVR, "watch") {
				out[k.Kind] = append(out[k.Kind], ns)
			}
		}
	}
	return nil
}

func allows(rules []authzv1.ResourceRule, gvr schema.GroupVersionResource, verb string) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, r := range rules {
		if has(r.Verbs, verb) && has(r.APIGroups, gvr.Group) && has(r.Resources, gvr.Resource) && len(r.ResourceNames) == 0 {
			return true
		}
	}
	return false
}
