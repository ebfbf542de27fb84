package render

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// exampleApps is Argo CD's argocd-example-apps checkout in the shared test
// data, or a skip (a failure under EDDY_REQUIRE_SHARED=1).
func exampleApps(t *testing.T) string {
	t.Helper()
	return filepath.Join(testenv.TestdataDir(t), "repos", "argocd-example-apps")
}

// ids lists objects as Kind/name (Kind/generateName* for a generated name),
// in order.
func ids(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		name := u.GetName()
		if name == "" {
			name = u.GetGenerateName() + "*"
		}
		out = append(out, u.GetKind()+"/"+name)
	}
	return out
}

// count is how many objects of kind objs holds.
func count(objs []*unstructured.Unstructured, kind string) int {
	n := 0
	for _, u := range objs {
		if u.GetKind() == kind {
			n++
		}
	}
	return n
}

// field is the value at path in u, printed ("" when absent).
func field(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(u.Object, path...)
	if err != nil {
		t.Fatalf("%s %v: %v", u.GetName(), path, err)
	}
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// TestExampleAppsRenderTheObjectsArgoCDDeploys renders each directory of
// argocd-example-apps as an Application of that name would, and checks the
// objects argocd-contract §9 lists.
func TestExampleAppsRenderTheObjectsArgoCDDeploys(t *testing.T) {
	root := exampleApps(t)
	sockShop := func(objs []*unstructured.Unstructured) []string {
		return []string{strconv.Itoa(count(objs, "Deployment")), strconv.Itoa(count(objs, "Service")), strconv.Itoa(count(objs, "Ingress"))}
	}
	tests := []struct {
		name    string
		app     string
		source  argov1.ApplicationSource
		typ     string
		want    []string
		summary func([]*unstructured.Unstructured) []string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{name: "guestbook is a directory of a Deployment and a Service", app: "guestbook",
			source: argov1.ApplicationSource{Path: "guestbook"}, typ: argov1.SourceTypeDirectory,
			want: []string{"Deployment/guestbook-ui", "Service/guestbook-ui"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := field(t, objs[0], "spec", "revisionHistoryLimit"); got != "3" {
					t.Errorf("revisionHistoryLimit = %q, want 3", got)
				}
			}},
		{name: "kustomize-guestbook prefixes the names and keeps the selector", app: "kustomize-guestbook",
			source: argov1.ApplicationSource{Path: "kustomize-guestbook"}, typ: argov1.SourceTypeKustomize,
			want: []string{"Service/kustomize-guestbook-ui", "Deployment/kustomize-guestbook-ui"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := field(t, objs[0], "spec", "selector", "app"); got != "guestbook-ui" {
					t.Errorf("Service selector app = %q, want guestbook-ui", got)
				}
			}},
		{name: "helm-guestbook is named after the release", app: "helm-guestbook",
			source: argov1.ApplicationSource{Path: "helm-guestbook"}, typ: argov1.SourceTypeHelm,
			want: []string{"Service/helm-guestbook", "Deployment/helm-guestbook"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				labels := objs[1].GetLabels()
				if labels["chart"] != "helm-guestbook-0.1.0" || labels["release"] != "helm-guestbook" || labels["heritage"] != "Helm" {
					t.Errorf("Deployment labels = %v", labels)
				}
				if got := field(t, objs[0], "spec", "type"); got != "ClusterIP" {
					t.Errorf("Service type = %q, want ClusterIP", got)
				}
			}},
		{name: "helm-guestbook with values-production.yaml has a LoadBalancer Service", app: "helm-guestbook",
			source: argov1.ApplicationSource{Path: "helm-guestbook", Helm: &argov1.ApplicationSourceHelm{ValueFiles: []string{"values-production.yaml"}}},
			typ:    argov1.SourceTypeHelm, want: []string{"Service/helm-guestbook", "Deployment/helm-guestbook"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := field(t, objs[0], "spec", "type"); got != "LoadBalancer" {
					t.Errorf("Service type = %q, want LoadBalancer", got)
				}
			}},
		{name: "helm-guestbook under another release name prefixes it", app: "guestbook-prod",
			source: argov1.ApplicationSource{Path: "helm-guestbook"}, typ: argov1.SourceTypeHelm,
			want: []string{"Service/guestbook-prod-helm-guestbook", "Deployment/guestbook-prod-helm-guestbook"}},
		{name: "helm-hooks keeps Helm's hook annotations", app: "helm-hooks",
			source: argov1.ApplicationSource{Path: "helm-hooks"}, typ: argov1.SourceTypeDirectory,
			want: []string{"Job/upgrade-sql-schema*", "Job/maint-page-up", "ReplicaSet/frontend", "Service/frontend", "Job/maint-page-down"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if a := objs[0].GetAnnotations(); a["helm.sh/hook"] != "pre-install" || a["helm.sh/hook-weight"] != "-2" {
					t.Errorf("upgrade-sql-schema annotations = %v", a)
				}
			}},
		// kustomize's legacy order: kinds ranked, then by name.
		{name: "pre-post-sync builds its bases: kustomize-guestbook with a second prefix", app: "pre-post-sync",
			source: argov1.ApplicationSource{Path: "pre-post-sync"}, typ: argov1.SourceTypeKustomize,
			want: []string{"Service/pre-post-sync-kustomize-guestbook-ui", "Deployment/pre-post-sync-kustomize-guestbook-ui", "Job/pre-post-sync-after", "Job/pre-post-sync-before"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if a := objs[3].GetAnnotations(); a[argov1.AnnotationHook] != "PreSync" {
					t.Errorf("before Job annotations = %v", a)
				}
				for _, u := range objs {
					if _, ok := u.GetAnnotations()["config.kubernetes.io/origin"]; ok {
						t.Errorf("%s carries kustomize's origin annotation", u.GetName())
					}
				}
			}},
		{name: "sync-waves keeps its waves and hooks in file order", app: "sync-waves",
			source: argov1.ApplicationSource{Path: "sync-waves"}, typ: argov1.SourceTypeDirectory,
			want: []string{"Job/upgrade-sql-schema*", "ReplicaSet/backend", "Service/backend", "Job/maint-page-up", "ReplicaSet/frontend", "Service/frontend", "Job/maint-page-down"}},
		{name: "jsonnet-guestbook evaluates with its params library", app: "jsonnet-guestbook",
			source: argov1.ApplicationSource{Path: "jsonnet-guestbook"}, typ: argov1.SourceTypeDirectory,
			want: []string{"Service/jsonnet-guestbook-ui", "Deployment/jsonnet-guestbook-ui"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := field(t, objs[0], "spec", "type"); got != "LoadBalancer" {
					t.Errorf("Service type = %q, want LoadBalancer", got)
				}
				if got := field(t, objs[1], "spec", "replicas"); got != "1" {
					t.Errorf("replicas = %q, want 1 (an integer)", got)
				}
			}},
		{name: "jsonnet-guestbook-tla takes its top-level arguments", app: "jsonnet-guestbook-tla",
			source: argov1.ApplicationSource{Path: "jsonnet-guestbook-tla", Directory: &argov1.ApplicationSourceDirectory{
				Jsonnet: argov1.ApplicationSourceJsonnet{TLAs: []argov1.JsonnetVar{
					{Name: "name", Value: "$ARGOCD_APP_NAME"},
					{Name: "replicas", Value: "3", Code: true},
					{Name: "type", Value: "ClusterIP"},
				}}}},
			typ:  argov1.SourceTypeDirectory,
			want: []string{"Service/jsonnet-guestbook-tla", "Deployment/jsonnet-guestbook-tla"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				if got := field(t, objs[0], "spec", "type"); got != "ClusterIP" {
					t.Errorf("Service type = %q, want ClusterIP", got)
				}
				if got := field(t, objs[1], "spec", "replicas"); got != "3" {
					t.Errorf("replicas = %q, want 3", got)
				}
			}},
		{name: "sock-shop is 14 Deployments, 14 Services and an Ingress", app: "sock-shop",
			source: argov1.ApplicationSource{Path: "sock-shop"}, typ: argov1.SourceTypeKustomize,
			summary: sockShop, want: []string{"14", "14", "1"},
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, u := range objs {
					if u.GetKind() == "Ingress" && u.GetName() != "front-end-ingress" {
						t.Errorf("Ingress %s, want front-end-ingress", u.GetName())
					}
				}
			}},
		{name: "apps renders the 14 child Applications", app: "apps",
			source: argov1.ApplicationSource{Path: "apps"}, typ: argov1.SourceTypeHelm,
			summary: func(objs []*unstructured.Unstructured) []string {
				var out []string
				for _, u := range objs {
					out = append(out, u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName())
				}
				return out
			},
			want: appsChildren(),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, u := range objs {
					if !slices.Equal(u.GetFinalizers(), []string{"resources-finalizer.argocd.argoproj.io"}) {
						t.Errorf("%s finalizers = %v", u.GetName(), u.GetFinalizers())
					}
				}
				if got := field(t, objs[8], "spec", "source", "plugin", "name"); got != "kasane" {
					t.Errorf("%s plugin name = %q, want kasane", objs[8].GetName(), got)
				}
			}},
		{name: "blue-green renders its Rollout without Argo Rollouts' CRDs", app: "blue-green",
			source: argov1.ApplicationSource{Path: "blue-green", Helm: &argov1.ApplicationSourceHelm{ReleaseName: "blue-green"}},
			typ:    argov1.SourceTypeHelm,
			summary: func(objs []*unstructured.Unstructured) []string {
				return []string{strconv.Itoa(count(objs, "Rollout")), strconv.Itoa(count(objs, "Service"))}
			},
			want: []string{"1", "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(context.Background(), Input{
				Root: root, Source: tt.source, AppName: tt.app, AppNamespace: "argocd", Project: "default",
				Namespace: tt.app, Revision: "0d521c6e049889134f3122eb32d7ed342f43ca0d", KubeVersion: "v1.37.2",
			})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if res.SourceType != tt.typ {
				t.Errorf("SourceType = %s, want %s", res.SourceType, tt.typ)
			}
			got := ids(res.Objects)
			if tt.summary != nil {
				got = tt.summary(res.Objects)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("objects = %v\nwant %v", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, res.Objects)
			}
		})
	}
}

// appsChildren is what the apps chart renders: Application/argocd/example.<dir>.
func appsChildren() []string {
	var out []string
	for _, n := range []string{"blue-green", "guestbook", "helm-dependency", "helm-guestbook", "helm-hooks", "jsonnet-guestbook",
		"jsonnet-guestbook-tla", "kustomize-guestbook", "plugin-kasane", "plugin-kustomized-helm", "plugin-nix", "pre-post-sync", "sock-shop", "sync-waves"} {
		out = append(out, "Application/argocd/example."+n)
	}
	return out
}

// TestHelmDependencyIsRefusedClearly checks that a chart whose dependency
// is not vendored gets a stable message naming it, with no fetch.
func TestHelmDependencyIsRefusedClearly(t *testing.T) {
	root := exampleApps(t)
	_, err := Render(context.Background(), Input{Root: root, Source: argov1.ApplicationSource{Path: "helm-dependency"}, AppName: "helm-dependency", Namespace: "helm-dependency"})
	want := `chart "wordpress" has dependencies that are not vendored: wordpress (https://charts.helm.sh/stable); Eddy does not run helm dependency build`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// TestPluginAppsGetErrPlugin checks each plugins/* app with its plugin
// block set, as the apps chart declares them.
func TestPluginAppsGetErrPlugin(t *testing.T) {
	root := exampleApps(t)
	for _, name := range []string{"kasane", "kustomized-helm", "nix"} {
		src := argov1.ApplicationSource{Path: "plugins/" + name, Plugin: &argov1.ApplicationSourcePlugin{Name: name}}
		if _, err := Render(context.Background(), Input{Root: root, Source: src, AppName: "plugin-" + name}); !errors.Is(err, ErrPlugin) {
			t.Errorf("%s: err = %v, want ErrPlugin", name, err)
		}
		typ, err := DetectType(root, src)
		if typ != argov1.SourceTypePlugin || !errors.Is(err, ErrPlugin) {
			t.Errorf("%s: DetectType = %q, %v", name, typ, err)
		}
	}
	// Without its plugin block, kustomized-helm (a kustomization beside a
	// Chart.yaml) is detected as Kustomize.
	if typ, err := DetectType(root, argov1.ApplicationSource{Path: "plugins/kustomized-helm"}); typ != argov1.SourceTypeKustomize || err != nil {
		t.Errorf("plugins/kustomized-helm without plugin: DetectType = %q, %v", typ, err)
	}
}
