package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/application-controller/internal/cluster"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// target resolves app's destination to the cluster it deploys to
// (argocd-contract §1.8, §8.2): the controller's own for
// https://kubernetes.default.svc or "in-cluster", else the one of a
// cluster Secret. Without a Registry (unit tests) only the local cluster
// exists.
func (r *ApplicationReconciler) target(ctx context.Context, app *argov1.Application) (*cluster.Target, error) {
	if r.Clusters == nil {
		return &cluster.Target{Server: argov1.InClusterServer, Name: argov1.InClusterName, Client: r.Client,
			Reader: r.APIReader, Mapper: r.Mapper, KubeVersion: r.KubeVersion, APIVersions: r.APIVersions}, nil
	}
	return r.Clusters.For(ctx, app.Spec.Destination)
}

// on is r acting on t for one reconcile: live reads, kind scopes,
// server-side apply, Helm's capabilities and the writes of managed objects
// go to t, while the controller's own objects (Applications, AppProjects,
// source objects) stay on its cluster.
func (r *ApplicationReconciler) on(t *cluster.Target) *ApplicationReconciler {
	rt := *r
	rt.dest = t
	if t.Client == r.Client {
		return &rt
	}
	rt.Client = &routedClient{Client: t.Client, own: r.Client, namespace: r.Namespace}
	rt.APIReader, rt.Mapper = t.Reader, t.Mapper
	rt.KubeVersion, rt.APIVersions = t.KubeVersion, t.APIVersions
	if r.SSA != nil {
		s := *r.SSA
		s.Client = t.Client
		s.MemoScope = r.SSA.MemoScope + "@" + t.Server
		rt.SSA = &s
	}
	return &rt
}

// destination is the server and name of the cluster r acts on.
func (r *ApplicationReconciler) destination() (server, name string) {
	if r.dest == nil {
		return argov1.InClusterServer, argov1.InClusterName
	}
	return r.dest.Server, r.dest.Name
}

// local reports whether r acts on the controller's own cluster with its
// own client, whose objects the live watches see.
func (r *ApplicationReconciler) local() bool {
	return r.dest == nil || r.dest.Client == r.Client
}

// destinationFailure is the comparison of an Application whose destination
// does not resolve (argocd-contract §1.8): InvalidSpecError when no cluster
// has that server or name or its Secret is unusable, ComparisonError
// "Failed to load live state: …" when the cluster does not answer, as
// Argo CD.
func destinationFailure(err error) *comparison {
	c := &comparison{sync: argov1.SyncStatusUnknown, err: err, errType: argov1.ConditionInvalidSpecError}
	if errors.Is(err, cluster.ErrUnavailable) {
		c.err, c.errType = fmt.Errorf("Failed to load live state: %w", err), argov1.ConditionComparisonError
	}
	return c
}

// forgetResources drops the resource finalizers of an Application being
// deleted whose destination names no cluster: Argo CD deletes nothing
// then, as there is nowhere to delete from.
func (r *ApplicationReconciler) forgetResources(ctx context.Context, app, orig *argov1.Application) (ctrl.Result, error) {
	app.Finalizers = slices.DeleteFunc(app.Finalizers, func(f string) bool { return slices.Contains(resourceFinalizers, f) })
	if err := r.Client.Patch(ctx, app, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{Requeue: true}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.gcSources(ctx)
}

// routedClient is the destination cluster's client except for the
// controller's own objects: argoproj.io objects of the Go types (the
// Application being reconciled, AppProjects) and source.toolkit.fluxcd.io
// objects in the controller's namespace go to own. Managed objects are
// always unstructured, so an Application rendered by an app of apps still
// goes to the destination.
type routedClient struct {
	client.Client
	own       client.Client
	namespace string
}

func (c *routedClient) pick(obj runtime.Object) client.Client {
	switch obj.(type) {
	case *argov1.Application, *argov1.ApplicationList, *argov1.AppProject, *argov1.AppProjectList:
		return c.own
	}
	if gvk, err := apiutil.GVKForObject(obj, c.own.Scheme()); err == nil && gvk.Group == sourcev1.GroupVersion.Group {
		if o, ok := obj.(client.Object); ok && o.GetNamespace() == c.namespace {
			return c.own
		}
	}
	return c.Client
}

func (c *routedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.pick(obj).Get(ctx, key, obj, opts...)
}

func (c *routedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.pick(list).List(ctx, list, opts...)
}

func (c *routedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.pick(obj).Create(ctx, obj, opts...)
}

func (c *routedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.pick(obj).Delete(ctx, obj, opts...)
}

func (c *routedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.pick(obj).Update(ctx, obj, opts...)
}

func (c *routedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.pick(obj).Patch(ctx, obj, patch, opts...)
}
