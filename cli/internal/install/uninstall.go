package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Logger prints uninstall's lines (cli/internal/ui's UI is one).
type Logger interface {
	Action(format string, args ...any)
	Success(format string, args ...any)
	Failure(format string, args ...any)
}

// UninstallOptions are `eddy uninstall`'s.
type UninstallOptions struct {
	Namespace     string
	KeepNamespace bool
	// DryRun sends every delete and update as a server-side dry-run:
	// the lines say what would go, nothing changes.
	DryRun bool
}

// The namespaced and cluster-scoped kinds of the components, in flux
// uninstall's order; ResourceQuota (Flux leaves it to the namespace's
// deletion) is added so --keep-namespace leaves none of the bundle.
var (
	componentKinds = []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Version: "v1", Kind: "Service"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
		{Version: "v1", Kind: "ServiceAccount"},
		{Version: "v1", Kind: "ResourceQuota"},
	}
	clusterKinds = []schema.GroupVersionKind{
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	}
	crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// Uninstall removes an installation in flux uninstall's order (contract
// §7): (1) the components labelled part-of=flux in the namespace, and the
// ClusterRoles and ClusterRoleBindings labelled part-of=flux and
// instance=<namespace>, and waits for the controllers' pods to stop
// (beyond Flux, see waitPodsGone); (2) the finalizers of every object of a
// *.toolkit.fluxcd.io kind in all namespaces, and of the argoproj.io kinds
// when the install labelled their CRDs (application-controller's: an
// Application's resources finalizer would otherwise hold its CRD's
// deletion once the controller is gone), so that the controllers' deletion
// does not prune the workloads they applied; (3) the CRDs labelled
// part-of=flux; (4) the namespace and, when this install created it (its
// labels say so), ApplicationNamespace, unless KeepNamespace. Each object
// gets a line; a failure does not stop the rest, and the error counts them.
func Uninstall(ctx context.Context, c client.Client, o UninstallOptions, log Logger) error {
	suffix, dry := "", []client.DeleteOption(nil)
	if o.DryRun {
		suffix, dry = " (dry run)", []client.DeleteOption{client.DryRunAll}
	}
	failed := 0
	del := func(u *unstructured.Unstructured, name string) {
		if err := c.Delete(ctx, u, dry...); err != nil && !apierrors.IsNotFound(err) {
			log.Failure("%s deletion failed: %s", name, err)
			failed++
			return
		}
		log.Success("%s deleted%s", name, suffix)
	}
	partOf := client.MatchingLabels{PartOfLabel: PartOfValue}

	log.Action("deleting components in %s namespace", o.Namespace)
	var controllers []*unstructured.Unstructured
	for _, gvk := range componentKinds {
		items, err := list(ctx, c, gvk, client.InNamespace(o.Namespace), partOf)
		if err != nil {
			return err
		}
		for _, u := range items {
			del(u, fmt.Sprintf("%s/%s/%s", gvk.Kind, u.GetNamespace(), u.GetName()))
		}
		if gvk.Kind == "Deployment" {
			controllers = items
		}
	}
	if !o.DryRun {
		if err := waitPodsGone(ctx, c, controllers, log); err != nil {
			return err
		}
	}
	for _, gvk := range clusterKinds {
		items, err := list(ctx, c, gvk, client.MatchingLabels{PartOfLabel: PartOfValue, InstanceLabel: o.Namespace})
		if err != nil {
			return err
		}
		for _, u := range items {
			del(u, fmt.Sprintf("%s/%s", gvk.Kind, u.GetName()))
		}
	}

	log.Action("deleting toolkit.fluxcd.io finalizers in all namespaces")
	n, err := releaseFinalizers(ctx, c, o.DryRun, suffix, log)
	if err != nil {
		return err
	}
	failed += n

	log.Action("deleting toolkit.fluxcd.io custom resource definitions")
	labelled, err := list(ctx, c, crdGVK, partOf)
	if err != nil {
		return err
	}
	for _, u := range labelled {
		del(u, "CustomResourceDefinition/"+u.GetName())
	}

	if !o.KeepNamespace {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(o.Namespace)
		del(ns, "Namespace/"+o.Namespace)
		apps, err := list(ctx, c, ns.GroupVersionKind(), client.MatchingLabels{PartOfLabel: PartOfValue, InstanceLabel: o.Namespace,
			ComponentLabel: ApplicationController})
		if err != nil {
			return err
		}
		for _, u := range apps {
			if u.GetName() != o.Namespace {
				del(u, "Namespace/"+u.GetName())
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("uninstall failed: %d object(s) could not be deleted or released", failed)
	}
	return nil
}

// releaseFinalizers removes the finalizers of every object of a
// releasable kind; it returns how many could not be released.
func releaseFinalizers(ctx context.Context, c client.Client, dryRun bool, suffix string, log Logger) (failed int, err error) {
	crds, err := list(ctx, c, crdGVK)
	if err != nil {
		return failed, err
	}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		version := storageVersion(crd)
		if !releasable(crd, group) || version == "" {
			continue
		}
		items, err := list(ctx, c, schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
		if err != nil {
			return failed, err
		}
		for _, u := range items {
			name := fmt.Sprintf("%s/%s/%s", kind, u.GetNamespace(), u.GetName())
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			opts := []client.PatchOption{}
			if dryRun {
				opts = append(opts, client.DryRunAll)
			}
			if err := c.Patch(ctx, u, patch, opts...); err != nil && !apierrors.IsNotFound(err) {
				log.Failure("%s removing finalizers failed: %s", name, err)
				failed++
				continue
			}
			log.Success("%s finalizers deleted%s", name, suffix)
		}
	}
	return failed, nil
}

// ControllersStopTimeout bounds Uninstall's wait for the controllers' pods
// to stop.
var ControllersStopTimeout = 2 * time.Minute

// waitPodsGone waits until no pod of deployments (by their selectors) is
// left. Beyond Flux: a controller still running while its objects' finalizers
// are removed would add them back as it reconciles (e.g. once a health check
// ends), and then finalize, that is prune, when the CRDs' deletion deletes
// its objects; Flux's uninstall does not wait.
func waitPodsGone(ctx context.Context, c client.Client, deployments []*unstructured.Unstructured, log Logger) error {
	var selectors []labels.Selector
	for _, d := range deployments {
		m, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		if len(m) > 0 {
			selectors = append(selectors, labels.SelectorFromSet(m))
		}
	}
	if len(selectors) == 0 {
		return nil
	}
	log.Action("waiting for the controllers' pods to stop")
	ns := deployments[0].GetNamespace()
	err := wait.PollUntilContextTimeout(ctx, time.Second, ControllersStopTimeout, true, func(ctx context.Context) (bool, error) {
		for _, sel := range selectors {
			pods, err := list(ctx, c, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})
			if err != nil || len(pods) > 0 {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the controllers' pods in %s did not stop (their objects keep their finalizers): %w", ns, err)
	}
	log.Success("controllers' pods stopped")
	return nil
}

// releasable says whether uninstall removes the finalizers of the objects
// of crd (of group): Flux's toolkit kinds, and Argo CD's when the install
// put their CRD there (labelled part-of=flux), not an Argo CD install,
// whose Applications are left as they are.
func releasable(crd *unstructured.Unstructured, group string) bool {
	switch {
	case strings.HasSuffix(group, ".toolkit.fluxcd.io"):
		return true
	case group == "argoproj.io":
		return crd.GetLabels()[PartOfLabel] == PartOfValue
	}
	return false
}

// list returns the objects of gvk, sorted by namespace and name; a kind the
// server does not serve gives none.
func list(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, l, opts...); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	return out, nil
}

// storageVersion is the CRD's stored version, else its first served one.
func storageVersion(crd *unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	served := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m["storage"] == true {
			name, _ := m["name"].(string)
			return name
		}
		if served == "" && m["served"] == true {
			served, _ = m["name"].(string)
		}
	}
	return served
}
