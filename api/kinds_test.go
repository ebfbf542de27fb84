package api_test

import (
	"reflect"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1beta1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// accessors are what every kind of Eddy's API offers its readers (the eddy
// command's table of kinds, the reconcilers): Flux's accessors of status.
type accessors interface {
	metav1.Object
	runtime.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
	GetLastHandledReconcileRequest() string
	IsSuspended() bool
}

// kindsOf returns a new object of every kind (not a list) that the
// packages' AddToScheme register, by group, version and kind; the options
// types metav1 adds to each group version are left out.
func kindsOf(t *testing.T) map[schema.GroupVersionKind]runtime.Object {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme,
		notificationv1.AddToScheme, notificationv1beta3.AddToScheme, argov1.AddToScheme, imagev1.AddToScheme, swv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	out := map[schema.GroupVersionKind]runtime.Object{}
	for gvk, typ := range s.AllKnownTypes() {
		if !strings.HasPrefix(typ.PkgPath(), "github.com/eddyops/eddy/api/") || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		out[gvk] = reflect.New(typ).Interface().(runtime.Object)
	}
	if len(out) == 0 {
		t.Fatal("no kinds registered")
	}
	return out
}

// TestEveryKindHasTheSharedAccessors: conditions, observed generation, last
// handled reconcile request and suspension are read the same way of every
// kind, the helm, notification and argoproj.io kinds included.
func TestEveryKindHasTheSharedAccessors(t *testing.T) {
	for gvk, o := range kindsOf(t) {
		if _, ok := o.(accessors); !ok {
			t.Errorf("%s (%T) lacks the shared accessors", gvk, o)
		}
	}
}

// TestEverySourceKindIsASource: every kind of the source group offers its
// artifact through sourcev1.Source, so consumers read it without knowing
// the kind.
func TestEverySourceKindIsASource(t *testing.T) {
	n := 0
	for gvk, o := range kindsOf(t) {
		if gvk.Group != sourcev1.GroupVersion.Group {
			continue
		}
		n++
		if _, ok := o.(sourcev1.Source); !ok {
			t.Errorf("%s (%T) is not a sourcev1.Source", gvk, o)
		}
	}
	if n != 6 {
		t.Errorf("%d source kinds; want GitRepository, OCIRepository, HelmRepository, HelmChart, Bucket and ExternalArtifact", n)
	}
}
