package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFluxKustomizeHelmExample reconciles flux2-kustomize-helm-example's
// apps/staging and apps/production overlays, the repository's files
// untouched: a Kustomization applies the overlay into a namespace of the
// test, with a patch pointing the HelmRepository at the local chart server
// (the real one is on the Internet). The HelmRelease becomes Ready with the
// overlay's values: the HTTPRoute's hostname is the overlay's.
func TestFluxKustomizeHelmExample(t *testing.T) {
	logsOnFailure(t)
	charts := helmtest.NewChartServer(t)
	charts.Add(helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))

	root := filepath.Join(testenv.TestdataDir(t), "repos", "flux2-kustomize-helm-example")
	files := dirFiles(t, root, "")
	repo := gitSrv.NewRepo(t, files)

	for _, overlay := range []string{"staging", "production"} {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			ns := testenv.NewNamespace(t, env.Client, "example-"+overlay+"-")
			src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Namespace: ns},
				Spec: sourcev1.GitRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour},
					Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
			create(t, src)
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: ns},
				Spec: kustomizev1.KustomizationSpec{
					Interval: metav1.Duration{Duration: time.Hour}, Path: "./apps/" + overlay, Prune: true,
					TargetNamespace: ns,
					SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "flux-system"},
					Patches: []kustomizev1.Patch{{
						Target: &kustomizev1.Selector{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"},
						Patch:  fmt.Sprintf(`[{"op": "replace", "path": "/spec/url", "value": %q}]`, charts.URL()),
					}},
				}}
			create(t, ks)

			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns}}
			waitReady(t, hr)
			route := &unstructured.Unstructured{}
			route.SetGroupVersionKind(schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"})
			route.SetNamespace(ns)
			route.SetName("podinfo")
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(route), route); err != nil {
				t.Fatal(err)
			}
			hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
			if len(hosts) != 1 || hosts[0] != "podinfo."+overlay {
				t.Errorf("HTTPRoute hostnames %v, want [podinfo.%s] from the %s overlay", hosts, overlay, overlay)
			}
			if hr.Status.History[0].ChartName != "podinfo" {
				t.Errorf("released chart %q, want podinfo", hr.Status.History[0].ChartName)
			}
		})
	}
}
