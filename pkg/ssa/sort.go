package ssa

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kindOrder is the apply order within a stage; unlisted kinds come after
// the listed ones except the webhook configurations, which go last so they
// do not intercept the objects they guard. Flux compatible (ReconcileOrder).
var kindOrder = func() map[string]int {
	kinds := []string{
		"CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterClass", "RuntimeClass",
		"PriorityClass", "StorageClass", "VolumeSnapshotClass", "IngressClass", "GatewayClass",
		"ClusterRoleBinding", "ResourceQuota", "ServiceAccount", "Role", "RoleBinding", "ConfigMap",
		"Secret", "Service", "LimitRange", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
	}
	m := map[string]int{}
	for i, k := range kinds {
		m[k] = i
	}
	m["MutatingWebhookConfiguration"] = 1000
	m["ValidatingWebhookConfiguration"] = 1001
	return m
}()

func rank(kind string) int {
	if r, ok := kindOrder[kind]; ok {
		return r
	}
	return 500
}

// stage of an object: 0 cluster definitions (CRDs, Namespaces,
// ClusterRoles), 1 `*Class` kinds, 2 everything else. Flux compatible.
func stage(u *unstructured.Unstructured) int {
	gk := u.GroupVersionKind().GroupKind()
	switch {
	case gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition",
		gk.Group == "" && gk.Kind == "Namespace",
		gk.Group == "rbac.authorization.k8s.io" && gk.Kind == "ClusterRole":
		return 0
	case strings.HasSuffix(gk.Kind, "Class"):
		return 1
	}
	return 2
}

// SortObjects orders objects as ApplyAll applies them: by stage, kind
// order, namespace and name, in place. Flux compatible (ReconcileOrder).
func SortObjects(objs []*unstructured.Unstructured) { sortObjects(objs) }

// sortObjects orders objects by stage, kind order, namespace and name.
func sortObjects(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if sa, sb := stage(a), stage(b); sa != sb {
			return sa < sb
		}
		if ra, rb := rank(a.GetKind()), rank(b.GetKind()); ra != rb {
			return ra < rb
		}
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}
