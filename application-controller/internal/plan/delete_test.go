package plan

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		out = append(out, u.GetName())
	}
	return out
}

func TestDeleteHooksSelectsPreAndPostDeleteHooks(t *testing.T) {
	objs := []*unstructured.Unstructured{
		job("argo-pre", "argocd.argoproj.io/hook", "PreDelete"),
		job("helm-pre", "helm.sh/hook", "pre-delete,pre-install"),
		job("argo-post", "argocd.argoproj.io/hook", "PostSync, PostDelete"),
		job("helm-post", "helm.sh/hook", "post-delete"),
		job("sync", "argocd.argoproj.io/hook", "PreSync"),
		job("both", "argocd.argoproj.io/hook", "PostSync", "helm.sh/hook", "pre-delete"),
		object("v1", "ConfigMap", "ns", "plain"),
	}
	cases := []struct {
		phase string
		want  []string
	}{
		{PhasePreDelete, []string{"argo-pre", "helm-pre", "both"}},
		{PhasePostDelete, []string{"argo-post", "helm-post"}},
		{PhasePreSync, nil},
	}
	for _, c := range cases {
		if got := names(DeleteHooks(objs, c.phase)); !slices.Equal(got, c.want) {
			t.Errorf("DeleteHooks(%s) = %v, want %v", c.phase, got, c.want)
		}
	}
}

func TestDeletionAllowedKeepsCRDsDeleteFalseAndHelmKeep(t *testing.T) {
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
	cases := []struct {
		name    string
		u       *unstructured.Unstructured
		opts    []string
		allowed bool
		confirm bool
	}{
		{"plain object", object("v1", "ConfigMap", "ns", "c"), nil, true, false},
		{"CRD", crd, nil, false, false},
		{"resource Delete=false", object("v1", "ConfigMap", "ns", "c", "argocd.argoproj.io/sync-options", "Delete=false"), nil, false, false},
		{"app Delete=false", object("v1", "ConfigMap", "ns", "c"), []string{"Delete=false"}, false, false},
		{"resource overrides app", object("v1", "ConfigMap", "ns", "c", "argocd.argoproj.io/sync-options", "Delete=true"),
			[]string{"Delete=false"}, true, false},
		{"helm keep", object("v1", "ConfigMap", "ns", "c", "helm.sh/resource-policy", "keep"), nil, false, false},
		{"Delete=confirm", object("v1", "ConfigMap", "ns", "c", "argocd.argoproj.io/sync-options", "Delete=confirm"), nil, true, true},
	}
	for _, c := range cases {
		if got := DeletionAllowed(c.u, c.opts); got != c.allowed {
			t.Errorf("%s: DeletionAllowed = %v", c.name, got)
		}
		if got := DeletionNeedsConfirm(c.u, c.opts); got != c.confirm {
			t.Errorf("%s: DeletionNeedsConfirm = %v", c.name, got)
		}
	}
}

func TestNextDeletionWaveIsTheHighestWave(t *testing.T) {
	w := func(name, wave string) *unstructured.Unstructured {
		return object("v1", "ConfigMap", "ns", name, "argocd.argoproj.io/sync-wave", wave)
	}
	cases := []struct {
		name string
		objs []*unstructured.Unstructured
		want []string
	}{
		{"none", nil, nil},
		{"one", []*unstructured.Unstructured{w("a", "-3")}, []string{"a"}},
		{"highest first", []*unstructured.Unstructured{w("a", "0"), w("b", "2"), w("c", "-1"), w("d", "2")}, []string{"b", "d"}},
		{"all negative", []*unstructured.Unstructured{w("a", "-5"), w("b", "-2")}, []string{"b"}},
		{"helm weight counts", []*unstructured.Unstructured{w("a", "1"),
			object("v1", "ConfigMap", "ns", "h", "helm.sh/hook-weight", "4")}, []string{"h"}},
	}
	for _, c := range cases {
		if got := names(NextDeletionWave(c.objs)); !slices.Equal(got, c.want) {
			t.Errorf("%s: NextDeletionWave = %v, want %v", c.name, got, c.want)
		}
	}
}
