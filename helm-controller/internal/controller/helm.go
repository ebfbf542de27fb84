package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/pkg/health"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

func (k *kstatusKube) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, false)
}

func (k *kstatusKube) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, true)
}

// wait polls every object of resources until each is Current; a Failed
// object ends it at once. Jobs count only with jobs. The error names the
// objects not ready: "timeout waiting for: [Kind/ns/name status: 'InProgress', ...]"
// (the form of Flux's ssa wait).
func (k *kstatusKube) wait(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	ctx, cancel := context.WithTimeout(k.ctx, timeout)
	defer cancel()
	tick := time.NewTicker(k.poll)
	defer tick.Stop()
	pending := []string{"no status read yet"}
	for {
		next, err := k.notReady(ctx, resources, jobs)
		if cause := canceledBy(k.ctx); cause != nil {
			return cause
		}
		if ctx.Err() != nil { // a read cut by the deadline decides nothing
			sort.Strings(pending)
			return fmt.Errorf("timeout waiting for: [%s]", strings.Join(pending, ", "))
		}
		if err != nil {
			return err
		}
		if len(next) == 0 {
			return nil
		}
		pending = next
		select {
		case <-ctx.Done():
			if cause := canceledBy(k.ctx); cause != nil {
				return cause
			}
			sort.Strings(pending)
			return fmt.Errorf("timeout waiting for: [%s]", strings.Join(pending, ", "))
		case <-tick.C:
		}
	}
}

// canceledBy returns the healthCheckCanceled that ended ctx, or nil.
func canceledBy(ctx context.Context) error {
	var hc *healthCheckCanceled
	if errors.As(context.Cause(ctx), &hc) {
		return hc
	}
	return nil
}

// notReady reads each object of resources once and returns those not
// Current as "Kind/ns/name status: '<status>'"; a Failed object is an error.
func (k *kstatusKube) notReady(ctx context.Context, resources kube.ResourceList, jobs bool) ([]string, error) {
	var pending []string
	for _, info := range resources {
		if info.Mapping == nil {
			continue
		}
		gvk := info.Mapping.GroupVersionKind
		if !jobs && gvk.Group == "batch" && gvk.Kind == "Job" {
			continue
		}
		var ri dynamic.ResourceInterface = k.dyn.Resource(info.Mapping.Resource)
		ref := gvk.Kind + "/" + info.Name
		if info.Namespaced() {
			ri = k.dyn.Resource(info.Mapping.Resource).Namespace(info.Namespace)
			ref = gvk.Kind + "/" + info.Namespace + "/" + info.Name
		}
		u, err := ri.Get(ctx, info.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			pending = append(pending, ref+" status: 'NotFound'")
			continue
		case err != nil:
			pending = append(pending, ref+" status: 'Unknown'")
			continue
		}
		res, err := health.Compute(u)
		switch {
		case err != nil:
			pending = append(pending, ref+" status: 'Unknown'")
		case res.Status == status.FailedStatus:
			return nil, fmt.Errorf("%s status: 'Failed': %s", ref, res.Message)
		case res.Status != status.CurrentStatus:
			pending = append(pending, fmt.Sprintf("%s status: '%s'", ref, res.Status))
		}
	}
	return pending, nil
}

// newHelmConfig is the Helm action configuration of one HelmRelease: the
// getter's namespace (the release namespace) for objects, Secrets storage in
// storageNS with maxHistory (0: unlimited), the kstatus waiter polling every
// poll (0: 2s; negative: Helm's legacy waiter), and observe told of every
// write to storage (nil: none).
func newHelmConfig(ctx context.Context, getter *restGetter, storageNS string, maxHistory int, poll time.Duration,
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
		kubeClient = &kstatusKube{Client: kc, ctx: ctx, dyn: dyn, poll: poll}
	}
	return &helmaction.Configuration{
		RESTClientGetter: getter,
		KubeClient:       kubeClient,
		Releases:         store,
		Log:              log,
	}, nil
}
