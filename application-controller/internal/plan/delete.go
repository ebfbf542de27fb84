package plan

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// deleteHookValues are the annotation values that make an object a hook
// of a deletion phase, by annotation key.
var deleteHookValues = map[string]map[string]string{
	PhasePreDelete:  {argov1.AnnotationHook: PhasePreDelete, AnnotationHelmHook: "pre-delete"},
	PhasePostDelete: {argov1.AnnotationHook: PhasePostDelete, AnnotationHelmHook: "post-delete"},
}

// IsDeleteHook is true when u is a hook of the deletion phase phase
// (PhasePreDelete or PhasePostDelete): argocd.argoproj.io/hook lists the
// phase or helm.sh/hook lists pre-delete / post-delete. As Argo CD does
// for deletion, either annotation counts, even when the other names other
// phases (argocd-contract §1.12, §4.3).
func IsDeleteHook(u *unstructured.Unstructured, phase string) bool {
	for key, value := range deleteHookValues[phase] {
		if slices.Contains(csv(u, key), value) {
			return true
		}
	}
	return false
}

// DeleteHooks returns, in their order, the objects of objs that are hooks
// of the deletion phase phase (see IsDeleteHook): the rendered PreDelete
// hooks run before an Application's resources are deleted, the PostDelete
// ones after (argocd-contract §1.12). An Application whose render has any
// gets the matching pre-/post-delete finalizer.
func DeleteHooks(objs []*unstructured.Unstructured, phase string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u != nil && IsDeleteHook(u, phase) {
			out = append(out, u)
		}
	}
	return out
}

// DeletionAllowed is true when the live object u may be deleted with its
// Application (argocd-contract §1.12): not a CRD, no Delete=false in force
// (the object's sync-options annotation, else opts, the Application's
// spec.syncPolicy.syncOptions), and no helm.sh/resource-policy: keep. The
// caller also keeps an Application that manages itself.
func DeletionAllowed(u *unstructured.Unstructured, opts []string) bool {
	gvk := u.GroupVersionKind()
	if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
		return false
	}
	if ParseOptions(opts, u).Delete == ValueFalse {
		return false
	}
	return !slices.Contains(csv(u, AnnotationHelmResourcePolicy), "keep")
}

// DeletionNeedsConfirm is true when Delete=confirm is in force for u: the
// deletion waits for argocd.argoproj.io/deletion-approved on the
// Application (argocd-contract §1.12).
func DeletionNeedsConfirm(u *unstructured.Unstructured, opts []string) bool {
	return ParseOptions(opts, u).Delete == ValueConfirm
}

// NextDeletionWave returns the objects of objs in the highest sync wave
// (see Wave), in their order: an Application's resources are deleted one
// wave at a time, highest first, each wave gone before the next
// (argocd-contract §1.12). Nil for no objects.
func NextDeletionWave(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	top := 0
	for _, u := range objs {
		switch w := Wave(u); {
		case len(out) == 0 || w > top:
			top, out = w, []*unstructured.Unstructured{u}
		case w == top:
			out = append(out, u)
		}
	}
	return out
}
