package tracking

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind, ns, name string, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if ann != nil {
		u.SetAnnotations(ann)
	}
	return u
}

func tracked(id string) map[string]string { return map[string]string{Annotation: id} }

func TestIDNamesAppGroupKindNamespaceName(t *testing.T) {
	tests := []struct {
		name          string
		u             *unstructured.Unstructured
		clusterScoped bool
		want          string
	}{
		{"core kind has an empty group", obj("v1", "ConfigMap", "production", "payment-config", nil), false,
			"payment-api:/ConfigMap:production/payment-config"},
		{"grouped kind", obj("apps/v1", "Deployment", "production", "api", nil), false,
			"payment-api:apps/Deployment:production/api"},
		{"namespaced object without namespace gets the destination's", obj("v1", "Service", "", "api", nil), false,
			"payment-api:/Service:production/api"},
		{"cluster-scoped object carries the destination namespace", obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader", nil), true,
			"payment-api:rbac.authorization.k8s.io/ClusterRole:production/reader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ID("payment-api", tt.u, "production", tt.clusterScoped); got != tt.want {
				t.Errorf("ID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseReadsArgoCDFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Parsed
		ok   bool
	}{
		{"payment-api:/ConfigMap:production/payment-config", Parsed{"payment-api", "", "ConfigMap", "production", "payment-config"}, true},
		{"argocd_guestbook:apps/Deployment:default/ui", Parsed{"argocd_guestbook", "apps", "Deployment", "default", "ui"}, true},
		{"app:rbac.authorization.k8s.io/ClusterRole:/reader", Parsed{"app", "rbac.authorization.k8s.io", "ClusterRole", "", "reader"}, true},
		{"app", Parsed{}, false},
		{"app:/ConfigMap", Parsed{}, false},
		{"app:ConfigMap:default/cm", Parsed{}, false},
		{"app:/ConfigMap:cm", Parsed{}, false},
		{"app:a/b/ConfigMap:default/cm", Parsed{}, false},
		{"", Parsed{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := Parse(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
			if ok && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestStampSkipsCRDsAndKeepsOtherAnnotations(t *testing.T) {
	cm := obj("v1", "ConfigMap", "", "cfg", map[string]string{"keep": "me", Annotation: "old:/ConfigMap:x/cfg"})
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com", nil)
	ns := obj("v1", "Namespace", "", "production", nil)
	Stamp([]*unstructured.Unstructured{cm, crd, ns, nil}, "payment-api", "production", func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "Namespace"
	})
	if got := cm.GetAnnotations(); got[Annotation] != "payment-api:/ConfigMap:production/cfg" || got["keep"] != "me" {
		t.Errorf("ConfigMap annotations = %v", got)
	}
	if got := crd.GetAnnotations(); got != nil {
		t.Errorf("CRD annotations = %v, want none", got)
	}
	if got := ns.GetAnnotations()[Annotation]; got != "payment-api:/Namespace:production/production" {
		t.Errorf("Namespace tracking = %q", got)
	}
}

func TestOwnedByNeedsSelfDescribingAnnotationAndNoOwner(t *testing.T) {
	withOwner := obj("apps/v1", "ReplicaSet", "production", "api-1", tracked("app:apps/ReplicaSet:production/api-1"))
	withOwner.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "api", UID: "u"}})
	tests := []struct {
		name          string
		u             *unstructured.Unstructured
		clusterScoped bool
		want          bool
	}{
		{"own annotation", obj("v1", "ConfigMap", "production", "cfg", tracked("app:/ConfigMap:production/cfg")), false, true},
		{"other app", obj("v1", "ConfigMap", "production", "cfg", tracked("other:/ConfigMap:production/cfg")), false, false},
		{"no annotation", obj("v1", "ConfigMap", "production", "cfg", nil), false, false},
		{"unparseable annotation", obj("v1", "ConfigMap", "production", "cfg", tracked("app")), false, false},
		{"copied from another name", obj("v1", "ConfigMap", "production", "copy", tracked("app:/ConfigMap:production/cfg")), false, false},
		{"copied from another namespace", obj("v1", "ConfigMap", "staging", "cfg", tracked("app:/ConfigMap:production/cfg")), false, false},
		{"copied from another kind", obj("v1", "Secret", "production", "cfg", tracked("app:/ConfigMap:production/cfg")), false, false},
		{"copied from another group", obj("apps/v1", "Deployment", "production", "api", tracked("app:extensions/Deployment:production/api")), false, false},
		{"cluster-scoped ignores the namespace slot", obj("v1", "Namespace", "", "production", tracked("app:/Namespace:elsewhere/production")), true, true},
		{"owned by another object", withOwner, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OwnedBy(tt.u, "app", tt.clusterScoped); got != tt.want {
				t.Errorf("OwnedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOtherOwnerNamesAnotherAppsInstance(t *testing.T) {
	tests := []struct {
		name string
		u    *unstructured.Unstructured
		want string
	}{
		{"another app", obj("v1", "ConfigMap", "production", "cfg", tracked("argocd_other:/ConfigMap:production/cfg")), "argocd_other"},
		{"this app", obj("v1", "ConfigMap", "production", "cfg", tracked("app:/ConfigMap:production/cfg")), ""},
		{"untracked", obj("v1", "ConfigMap", "production", "cfg", nil), ""},
		{"copied annotation", obj("v1", "ConfigMap", "production", "copy", tracked("other:/ConfigMap:production/cfg")), ""},
		{"empty app name", obj("v1", "ConfigMap", "production", "cfg", tracked(":/ConfigMap:production/cfg")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OtherOwner(tt.u, "app", false); got != tt.want {
				t.Errorf("OtherOwner = %q, want %q", got, tt.want)
			}
		})
	}
}
