package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/pkg/cel"
	"github.com/eddyops/eddy/pkg/health"
	"github.com/eddyops/eddy/pkg/ssa"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restGetter is Helm's RESTClientGetter over a fixed rest.Config, with
// namespace as the default namespace of the objects Helm builds (the
// release namespace). Its discovery is cached for the getter's lifetime.
type restGetter struct {
	cfg       *rest.Config
	namespace string

	once   sync.Once
	disc   discovery.CachedDiscoveryInterface
	mapper apimeta.RESTMapper
	err    error

	clientOnce sync.Once
	c          client.Client
	cErr       error
}

// client returns a controller-runtime client of the getter's config that
// reads the API server directly (drift detection and correction).
func (g *restGetter) client() (client.Client, error) {
	g.clientOnce.Do(func() {
		mapper, err := g.ToRESTMapper()
		if err != nil {
			g.cErr = err
			return
		}
		g.c, g.cErr = client.New(rest.CopyConfig(g.cfg), client.Options{Mapper: mapper})
	})
	return g.c, g.cErr
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) init() {
	g.once.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(g.cfg))
		if err != nil {
			g.err = err
			return
		}
		g.disc = memory.NewMemCacheClient(dc)
		g.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(g.disc), g.disc, nil)
	})
}

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.init()
	return g.disc, g.err
}

func (g *restGetter) ToRESTMapper() (apimeta.RESTMapper, error) {
	g.init()
	return g.mapper, g.err
}

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(),
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// kstatusKube is Helm's Kubernetes client whose Wait and WaitWithJobs poll
// the release's objects with kstatus (pkg/health) until all are Current,
// instead of Helm's legacy waiter: Flux's default `waitStrategy: poller`.
type kstatusKube struct {
	*kube.Client
	ctx  context.Context
	dyn  dynamic.Interface
	poll time.Duration
	// getter's client reads the pods of the objects left not ready.
	getter *restGetter
	// exprs are the HelmRelease's healthCheckExprs (nil: none).
	exprs *cel.HealthChecks
}

func (k *kstatusKube) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, false)
}

func (k *kstatusKube) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, true)
}

// wait polls every object of resources until each is Current
// (ssa.WaitForSet); a Failed object ends it at once. Jobs count only with
// jobs. The error names the objects not ready: "timeout waiting for:
// [Kind/ns/name status: 'InProgress', ...]" (the form of Flux's ssa wait),
// or a Failed one: "Kind/ns/name status: 'Failed': <kstatus message>";
// beyond Flux, followed by what their pods show (ssa.DetailMessage).
func (k *kstatusKube) wait(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	ctx, cancel := context.WithTimeout(k.ctx, timeout)
	defer cancel()
	var targets []ssa.ObjMeta
	index := map[ssa.ObjMeta]int{} // of the object in resources
	for i, info := range resources {
		if info.Mapping == nil {
			continue
		}
		gvk := info.Mapping.GroupVersionKind
		if !jobs && gvk.Group == "batch" && gvk.Kind == "Job" {
			continue
		}
		t := ssa.ObjMeta{Name: info.Name, GroupKind: gvk.GroupKind()}
		if info.Namespaced() {
			t.Namespace = info.Namespace
		}
		targets, index[t] = append(targets, t), i
	}
	gvr := func(t ssa.ObjMeta) schema.GroupVersionResource { return resources[index[t]].Mapping.Resource }
	pending := map[ssa.ObjMeta]bool{} // as last read: not Current
	read := func(ctx context.Context, t ssa.ObjMeta) (ssa.ObjectStatus, error) {
		s := k.read(ctx, gvr(t), t.Namespace, t.Name)
		pending[t] = s.Status != status.CurrentStatus
		return s, nil
	}
	wake := make(chan struct{}, 1)
	stopWatches := func() {}
	firstRound := func() { stopWatches = k.watchSettling(ctx, targets, pending, gvr, wake) }
	st, err := ssa.WaitForSet(ctx, targets, ssa.SetWait{Poll: k.poll, Read: read, Explain: k.explain, FirstRound: firstRound, Wake: wake})
	stopWatches()
	if cause := canceledBy(k.ctx); cause != nil {
		return cause
	}
	switch {
	case err == nil && len(st.Failed) > 0:
		return errors.New(ssa.DetailMessage(fmt.Sprintf("%s status: 'Failed': %s", st.Failed[0].Meta, st.Failed[0].Message), st.Failed[:1]))
	case ctx.Err() != nil:
		pending := []string{"no status read yet"}
		if st.Complete {
			pending = ssa.StatusLines(st.Pending)
		}
		return errors.New(ssa.DetailMessage(ssa.TimeoutMessage(pending), st.Pending))
	}
	return err
}

// explain says what the pods of an object left not ready show
// (health.PodsDetail), read once when the wait ends.
func (k *kstatusKube) explain(ctx context.Context, s ssa.ObjectStatus) string {
	if s.Object == nil || k.getter == nil {
		return ""
	}
	c, err := k.getter.client()
	if err != nil {
		return ""
	}
	return health.PodsDetail(ctx, c, s.Object)
}

// canceledBy returns the healthCheckCanceled that ended ctx, or nil.
func canceledBy(ctx context.Context) error {
	var hc *healthCheckCanceled
	if errors.As(context.Cause(ctx), &hc) {
		return hc
	}
	return nil
}

// read reads the object of resource gvr named name, in namespace (""
// for a cluster-scoped one), once: NotFound, Unknown when it cannot be
// read (with the error) or its status computed (pkg/health), else its
// kstatus status.
func (k *kstatusKube) read(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) ssa.ObjectStatus {
	var ri dynamic.ResourceInterface = k.dyn.Resource(gvr)
	if namespace != "" {
		ri = k.dyn.Resource(gvr).Namespace(namespace)
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ssa.ObjectStatus{Status: status.NotFoundStatus}
	case err != nil: // said after the status: why it is Unknown
		return ssa.ObjectStatus{Status: status.UnknownStatus, Err: err}
	}
	res, celErr, err := objectStatus(ctx, k.exprs, u)
	switch {
	case celErr != nil:
		return ssa.ObjectStatus{Status: status.UnknownStatus, Err: celErr, Object: u}
	case err != nil:
		return ssa.ObjectStatus{Status: status.UnknownStatus, Object: u}
	}
	return ssa.ObjectStatus{Status: res.Status, Message: res.Message, Object: u}
}

// newHelmConfig is the Helm action configuration of one HelmRelease: the
// getter's namespace (the release namespace) for objects, Secrets storage in
// storageNS with maxHistory (0: unlimited), the kstatus waiter polling every
// poll (0: 2s; negative: Helm's legacy waiter) with exprs deciding the
// kinds they name (nil: none), and observe told of every write to storage
// (nil: none).
func newHelmConfig(ctx context.Context, getter *restGetter, storageNS string, maxHistory int, poll time.Duration, exprs *cel.HealthChecks,
	log func(string, ...any), observe func(*helmrelease.Release)) (*helmaction.Configuration, error) {
	restCfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	kc := kube.New(getter)
	withFieldValidationCache(kc, getter)
	kc.Namespace = getter.namespace
	kc.Log = log
	sec := driver.NewSecrets(cs.CoreV1().Secrets(storageNS))
	sec.Log = log
	var d driver.Driver = sec
	if observe != nil {
		d = &release.Observer{Driver: sec, Observe: observe}
	}
	store := storage.Init(d)
	store.MaxHistory = maxHistory
	store.Log = log
	if poll == 0 {
		poll = 2 * time.Second
	}
	// A negative poll selects Helm's own waiter (waitStrategy: legacy).
	var kubeClient kube.Interface = kc
	if poll > 0 {
		kubeClient = &kstatusKube{Client: kc, ctx: ctx, dyn: dyn, poll: poll, getter: getter, exprs: exprs}
	}
	return &helmaction.Configuration{
		RESTClientGetter: getter,
		KubeClient:       kubeClient,
		Releases:         store,
		Log:              log,
	}, nil
}
