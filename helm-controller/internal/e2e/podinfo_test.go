package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestPodinfoFromEachSource releases podinfo's chart, packaged once, from
// each kind of chart source: a HelmRepository over HTTP with basic auth, a
// HelmRepository of type oci on an in-process registry, and the chart's
// directory in a GitRepository. Each release installs exactly the objects
// `helm template` renders (testdata expected/podinfo/helm-template), and
// Helm's own storage holds the release Flux would write.
func TestPodinfoFromEachSource(t *testing.T) {
	logsOnFailure(t)
	chartDir := helmtest.PodinfoChartDir(t)
	tgz := helmtest.PackageChart(t, chartDir)
	ch, err := loader.Load(tgz)
	if err != nil {
		t.Fatal(err)
	}
	version := ch.Metadata.Version

	http := helmtest.NewChartServer(t, helmtest.WithBasicAuth("flux", "s3cret-pass"))
	http.Add(tgz)
	oci := helmtest.NewOCIRegistry(t)
	oci.Push(t, tgz)
	files := dirFiles(t, chartDir, "charts/podinfo/")
	repo := gitSrv.NewRepo(t, files)

	// httpSource makes a HelmRepository of the chart server in ns, with
	// its basic-auth Secret, and returns a chart template of podinfo at
	// version (a semver constraint) from it.
	httpSource := func(t *testing.T, ns, version string) helmv2.HelmChartTemplateSpec {
		create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-auth", Namespace: ns},
			StringData: map[string]string{"username": "flux", "password": "s3cret-pass"}})
		create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
			Spec: sourcev1.HelmRepositorySpec{URL: http.URL(), Interval: metav1.Duration{Duration: time.Hour},
				SecretRef: &meta.LocalObjectReference{Name: "repo-auth"}}})
		return helmv2.HelmChartTemplateSpec{Chart: "podinfo", Version: version,
			SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}
	}

	production, err := os.ReadFile(filepath.Join(testenv.TestdataDir(t), "expected", "podinfo", "helm-template",
		"flux-example-production-values", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, testcase string
		values         []byte
		source         func(t *testing.T, ns string) helmv2.HelmChartTemplateSpec
	}{
		{name: "http", testcase: "default", source: func(t *testing.T, ns string) helmv2.HelmChartTemplateSpec {
			return httpSource(t, ns, "*")
		}},
		{name: "oci", testcase: "default", source: func(t *testing.T, ns string) helmv2.HelmChartTemplateSpec {
			create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
				Spec: sourcev1.HelmRepositorySpec{URL: oci.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
					Interval: metav1.Duration{Duration: time.Hour}}})
			return helmv2.HelmChartTemplateSpec{Chart: "podinfo", Version: "*",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}
		}},
		{name: "git", testcase: "default", source: func(t *testing.T, ns string) helmv2.HelmChartTemplateSpec {
			create(t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
				Spec: sourcev1.GitRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour},
					Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}})
			return helmv2.HelmChartTemplateSpec{Chart: "./charts/podinfo",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "podinfo"}}
		}},
		{name: "http-production-values", testcase: "flux-example-production-values", values: production,
			source: func(t *testing.T, ns string) helmv2.HelmChartTemplateSpec { return httpSource(t, ns, ">=6.0.0") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := testenv.NewNamespace(t, env.Client, "hr-"+tc.name+"-")
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
				Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
					Chart: &helmv2.HelmChartTemplate{Spec: tc.source(t, ns)}}}
			if tc.values != nil {
				j, err := yaml.YAMLToJSON(tc.values)
				if err != nil {
					t.Fatal(err)
				}
				hr.Spec.Values = &apiextensionsv1.JSON{Raw: j}
			}
			create(t, hr)
			waitReady(t, hr)

			ready := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
			wantMsg := fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, version)
			if ready.Reason != helmv2.InstallSucceededReason || ready.Message != wantMsg {
				t.Errorf("Ready %s %q, want %s %q", ready.Reason, ready.Message, helmv2.InstallSucceededReason, wantMsg)
			}
			if got, want := inventory(hr), expectedObjects(t, tc.testcase, ns); !reflect.DeepEqual(got, want) {
				t.Errorf("inventory:\n%v\nwant (helm template):\n%v", got, want)
			}
			if hr.Status.HelmChart != ns+"/"+ns+"-podinfo" {
				t.Errorf("status.helmChart %q, want %s/%s-podinfo", hr.Status.HelmChart, ns, ns)
			}
			if len(hr.Status.History) != 1 || hr.Status.History[0].Status != "deployed" || hr.Status.History[0].Version != 1 ||
				hr.Status.History[0].ChartVersion != version || hr.Status.History[0].Name != "podinfo" {
				t.Errorf("status.history %+v, want one deployed snapshot of podinfo v1 with chart version %s", hr.Status.History, version)
			}

			// `helm list -a` and `helm history` read the release from Helm's storage.
			rels := helmtest.Releases(t, env.KubeconfigPath, ns)
			if len(rels) != 1 || rels[0].Name != "podinfo" || rels[0].Version != 1 || rels[0].Info.Status != "deployed" ||
				rels[0].Chart.Metadata.Version != version || rels[0].Namespace != ns {
				t.Fatalf("helm list -a: %v, want podinfo v1 deployed in %s with chart %s", describe(rels), ns, version)
			}
			if hist := helmtest.History(t, env.KubeconfigPath, ns, "podinfo"); len(hist) != 1 {
				t.Errorf("helm history: %d revisions, want 1", len(hist))
			}
			var cfg map[string]any
			if tc.values != nil {
				if err := yaml.Unmarshal(tc.values, &cfg); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := json.Marshal(rels[0].Config)
			want, _ := json.Marshal(cfg)
			if tc.values != nil && string(got) != string(want) {
				t.Errorf("release values %s, want %s", got, want)
			}
		})
	}
}
