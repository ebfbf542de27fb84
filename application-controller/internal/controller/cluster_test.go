package controller

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestRoutedClientKeepsTheControllersObjectsHome(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	own, dest := fake.NewClientBuilder().WithScheme(scheme).Build(), fake.NewClientBuilder().WithScheme(scheme).Build()
	c := &routedClient{Client: dest, own: own, namespace: "argocd"}
	u := func(gv schema.GroupVersion, kind, ns string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gv.WithKind(kind))
		o.SetNamespace(ns)
		return o
	}
	tests := []struct {
		name string
		obj  runtime.Object
		own  bool
	}{
		{"the Application", &argov1.Application{}, true},
		{"Applications listed", &argov1.ApplicationList{}, true},
		{"an AppProject", &argov1.AppProject{}, true},
		{"a source object in the controller's namespace", u(sourcev1.GroupVersion, "GitRepository", "argocd"), true},
		{"a rendered Application", u(argov1.GroupVersion, "Application", "argocd"), false},
		{"a rendered GitRepository elsewhere", u(sourcev1.GroupVersion, "GitRepository", "apps"), false},
		{"a rendered ConfigMap", u(corev1.SchemeGroupVersion, "ConfigMap", "argocd"), false},
		{"a created Namespace", &corev1.Namespace{}, false},
	}
	for _, tc := range tests {
		want, where := client.Client(dest), "the destination"
		if tc.own {
			want, where = own, "the controller's cluster"
		}
		if c.pick(tc.obj) != want {
			t.Errorf("%s: not sent to %s", tc.name, where)
		}
	}
}
