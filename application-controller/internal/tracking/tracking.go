// Package tracking reads and writes Argo CD's resource tracking annotation,
// argocd.argoproj.io/tracking-id, the annotation method Argo CD 3.x uses by
// default (argocd-contract §5). Its value names the Application instance
// that manages an object and describes the object itself:
//
//	<appInstanceName>:<group>/<Kind>:<namespace>/<name>
//
// e.g. `payment-api:/ConfigMap:production/payment-config`.
package tracking

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// Annotation is the key of the tracking annotation.
const Annotation = argov1.AnnotationTrackingID

// Parsed is a tracking annotation's value split into its parts; Group is
// empty for core kinds.
type Parsed struct{ App, Group, Kind, Namespace, Name string }

// String renders p as an annotation value.
func (p Parsed) String() string {
	return p.App + ":" + p.Group + "/" + p.Kind + ":" + p.Namespace + "/" + p.Name
}

// ID is the annotation value for u managed by appInstance (the
// Application's instance name, `<ns>_<name>` outside the controller's
// namespace): `<appInstance>:<group>/<Kind>:<namespace>/<name>`, group
// empty for core kinds. Cluster-scoped objects, and namespaced ones that
// name no namespace, carry destNamespace, the Application's
// spec.destination.namespace, as Argo CD's repo-server writes them
// (argocd-contract §5).
func ID(appInstance string, u *unstructured.Unstructured, destNamespace string, clusterScoped bool) string {
	ns := u.GetNamespace()
	if clusterScoped || ns == "" {
		ns = destNamespace
	}
	gvk := u.GroupVersionKind()
	return Parsed{App: appInstance, Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: u.GetName()}.String()
}

// Parse splits an annotation value into its parts. ok is false unless v
// has three `:`-separated parts (the first colon ends the app name, the
// second the group/kind), a group/kind with exactly one `/` and a
// namespace/name with exactly one `/`, Argo CD's format rule. The parts
// themselves may be empty (a core group, a cluster-scoped namespace).
func Parse(v string) (Parsed, bool) {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) != 3 {
		return Parsed{}, false
	}
	gk := strings.Split(parts[1], "/")
	nn := strings.Split(parts[2], "/")
	if len(gk) != 2 || len(nn) != 2 {
		return Parsed{}, false
	}
	return Parsed{App: parts[0], Group: gk[0], Kind: gk[1], Namespace: nn[0], Name: nn[1]}, true
}

// IsCRD reports whether u is an apiextensions.k8s.io
// CustomResourceDefinition, which Argo CD never tracks (argocd-contract §5).
func IsCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// Stamp sets the tracking annotation (ID) on every desired object except
// CRDs, replacing any value the render carried: Argo CD's repo-server
// stamps every rendered object but CRDs before apply (argocd-contract §5).
// clusterScoped reports an object's scope; nil treats every object as
// namespaced.
func Stamp(objs []*unstructured.Unstructured, appInstance, destNamespace string, clusterScoped func(u *unstructured.Unstructured) bool) {
	for _, u := range objs {
		if u == nil || IsCRD(u) {
			continue
		}
		scoped := clusterScoped != nil && clusterScoped(u)
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[Annotation] = ID(appInstance, u, destNamespace, scoped)
		u.SetAnnotations(ann)
	}
}

// Of returns the parsed tracking annotation of u when it has one that
// parses and that describes u itself: same group, kind and name and, for
// a namespaced object, the same namespace (a cluster-scoped object's
// namespace slot holds the Application's destination namespace and is not
// compared). An annotation copied onto another object fails this, as
// Argo CD's self-reference check does (argocd-contract §5).
func Of(u *unstructured.Unstructured, clusterScoped bool) (Parsed, bool) {
	p, ok := Parse(u.GetAnnotations()[Annotation])
	if !ok {
		return Parsed{}, false
	}
	gvk := u.GroupVersionKind()
	if p.Group != gvk.Group || p.Kind != gvk.Kind || p.Name != u.GetName() {
		return Parsed{}, false
	}
	if !clusterScoped && u.GetNamespace() != "" && p.Namespace != u.GetNamespace() {
		return Parsed{}, false
	}
	return p, true
}

// OwnedBy reports whether the live object u is a pruning candidate of
// appInstance: its tracking annotation names appInstance and describes u
// itself (Of), and u has no ownerReferences (objects another object owns,
// a Deployment's ReplicaSets, are left to their owner), argocd-contract §5.
func OwnedBy(u *unstructured.Unstructured, appInstance string, clusterScoped bool) bool {
	if len(u.GetOwnerReferences()) > 0 {
		return false
	}
	p, ok := Of(u, clusterScoped)
	return ok && p.App == appInstance
}

// OtherOwner returns the app instance name that u's tracking annotation
// names when that annotation describes u itself (Of) and names an
// instance other than appInstance; "" otherwise. A non-empty result is
// Argo CD's SharedResourceWarning ("<Kind>/<name> is part of applications
// <this> and <other>", with `_` in the other's instance name read as `/`),
// argocd-contract §5.
func OtherOwner(u *unstructured.Unstructured, appInstance string, clusterScoped bool) string {
	p, ok := Of(u, clusterScoped)
	if !ok || p.App == "" || p.App == appInstance {
		return ""
	}
	return p.App
}
