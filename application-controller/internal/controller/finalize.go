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
	waves, err := r.deletableByWave(ctx, app)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(waves) > 0 {
		top := slices.Max(keysOf(waves))
		prop := metav1.DeletePropagationForeground
		if fin == argov1.FinalizerResourcesBackground {
			prop = metav1.DeletePropagationBackground
		}
		for _, u := range waves[top] {
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

// deletableByWave reads the Application's tracked live objects that
// deletion may remove (never CRDs, Delete=false objects, or those with
// helm.sh/resource-policy: keep), grouped by sync wave.
func (r *ApplicationReconciler) deletableByWave(ctx context.Context, app *argov1.Application) (map[int][]*unstructured.Unstructured, error) {
	out := map[int][]*unstructured.Unstructured{}
	instance := app.InstanceName(r.Namespace)
	for _, res := range app.Status.Resources {
		if res.Hook || res.Kind == "CustomResourceDefinition" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
		live, err := r.getLive(ctx, gvk, res.Namespace, res.Name)
		if err != nil {
			return nil, err
		}
		if live == nil || !tracking.OwnedBy(live, instance, res.Namespace == "") || isSelf(app, live) {
			continue
		}
		opts := plan.ParseOptions(app.GetSyncOptions(), live)
		if opts.Delete == "false" || live.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
			continue
		}
		w := plan.Wave(live)
		out[w] = append(out[w], live)
	}
	return out, nil
}

func keysOf(m map[int][]*unstructured.Unstructured) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
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
