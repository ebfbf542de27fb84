package kinds

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ApplicationSourceLabel marks the source objects (GitRepository,
// HelmRepository, HelmChart, OCIRepository named app-src-<hash>) and
// Secrets that application-controller creates for its Applications' sources:
// the same key as its internal/source.LabelSource.
const ApplicationSourceLabel = "eddy.dev/application-source"

// IsApplicationSource reports whether o is one of application-controller's
// source objects: they are its implementation, not objects the user wrote,
// so listings of the user's Flux objects leave them out.
func IsApplicationSource(o metav1.Object) bool {
	_, ok := o.GetLabels()[ApplicationSourceLabel]
	return ok
}

// HideApplicationSources removes application-controller's source objects
// (IsApplicationSource) from the list l, in place; an error when l is not
// a list.
func HideApplicationSources(l runtime.Object) error {
	items, err := apimeta.ExtractList(l)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, o := range items {
		if m, ok := o.(metav1.Object); !ok || !IsApplicationSource(m) {
			kept = append(kept, o)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return apimeta.SetList(l, kept)
}
