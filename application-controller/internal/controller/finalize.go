package controller

import (
	"context"
	"slices"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/eddyops/eddy/application-controller/internal/tracking"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var resourceFinalizers = []string{argov1.FinalizerResources, argov1.FinalizerResourcesForeground, argov1.FinalizerResourcesBackground}

// finalize deletes a deleted Application's objects when it carries a
// resources finalizer, one sync wave at a time, highest first, each wave
// gone before the next (argocd-contract §1.12); then it drops the
// finalizer. Without one, the objects stay (Argo CD orphans them).
func (r *ApplicationReconciler) finalize(ctx context.Context, app, orig *argov1.Application) (ctrl.Result, error) {
	fin := ""
	for _, f := range app.Finalizers {
		if slices.Contains(resourceFinalizers, f) {
			fin = f
		}
	}
	if fin == "" {
		return ctrl.Result{}, r.gcSources(ctx)
	}
	if st := app.Status.OperationState; st != nil && st.Phase == argov1.OperationRunning {
		r.terminateHooks(ctx, st) // a sync cut short leaves no hook running
	}
	objs, err := r.deletable(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(objs) > 0 {
		prop := metav1.DeletePropagationForeground
		if fin == argov1.FinalizerResourcesBackground {
			prop = metav1.DeletePropagationBackground
		}
		for _, u := range plan.NextDeletionWave(objs) {
			if u.GetDeletionTimestamp() != nil {
				continue
			}
			if err := r.Client.Delete(ctx, u, client.PropagationPolicy(prop)); client.IgnoreNotFound(err) != nil {
				r.event(app, corev1.EventTypeWarning, "DeletionError", u.GetKind()+"/"+u.GetName()+": "+apiReason(err))
			}
		}
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	app.Finalizers = slices.DeleteFunc(app.Finalizers, func(f string) bool { return slices.Contains(resourceFinalizers, f) })
	if err := r.Client.Patch(ctx, app, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{Requeue: true}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, r.gcSources(ctx)
}

// deletable reads the Application's tracked live objects that deletion
// may remove (plan.DeletionAllowed): those of status.resources and the
// hooks of the last operation (Argo CD deletes every tracked object but
// CRDs and the Application itself); a hook loses its hook finalizer.
func (r *ApplicationReconciler) deletable(ctx context.Context, app *argov1.Application) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	instance := app.InstanceName(r.Namespace)
	for _, ref := range finalizeCandidates(app) {
		live, err := r.getLive(ctx, ref.gvk, ref.namespace, ref.name)
		if err != nil {
			return nil, err
		}
		if live == nil || !tracking.OwnedBy(live, instance, ref.namespace == "") || isSelf(app, live) {
			continue
		}
		if !plan.DeletionAllowed(live, app.GetSyncOptions()) {
			continue
		}
		if err := r.removeHookFinalizer(ctx, live); err != nil {
			return nil, err
		}
		out = append(out, live)
	}
	return out, nil
}

type objectRef struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// finalizeCandidates are the objects of status.resources (not hooks, not
// CRDs) and the hooks the last operation recorded, each once.
func finalizeCandidates(app *argov1.Application) []objectRef {
	seen := map[objectRef]bool{}
	var out []objectRef
	add := func(group, version, kind, ns, name string) {
		ref := objectRef{schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, ns, name}
		if kind == "CustomResourceDefinition" || name == "" || seen[ref] {
			return
		}
		seen[ref] = true
		out = append(out, ref)
	}
	for _, res := range app.Status.Resources {
		if !res.Hook {
			add(res.Group, res.Version, res.Kind, res.Namespace, res.Name)
		}
	}
	if st := app.Status.OperationState; st != nil && st.SyncResult != nil {
		for _, res := range st.SyncResult.Resources {
			if res.HookType != "" {
				add(res.Group, res.Version, res.Kind, res.Namespace, res.Name)
			}
		}
	}
	return out
}

// gcSources deletes the source objects no Application uses any more.
func (r *ApplicationReconciler) gcSources(ctx context.Context) error {
	var apps argov1.ApplicationList
	if err := r.Client.List(ctx, &apps); err != nil {
		return err
	}
	return r.Sources.GC(ctx, apps.Items)
}
