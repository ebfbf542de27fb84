package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestMutateChartVersion checks Flux's revision rules for charts from an
// OCIRepository: the version gets the first 12 hex of the digest, a semver
// tag must be the chart's version, the recorded digest is the revision's;
// with digest tracking off (DisableChartDigestTracking) the version stays,
// the checks and the digest do not change.
func TestMutateChartVersion(t *testing.T) {
	const hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name, version, revision, wantVersion, wantDigest, wantErr string
	}{
		{"semver tag", "6.5.0", "6.5.0@sha256:" + hex, "6.5.0+0123456789ab", "sha256:" + hex, ""},
		{"tag with build metadata as Helm pushes it", "1.0.0+build.1", "1.0.0_build.1@sha256:" + hex, "1.0.0+0123456789ab", "sha256:" + hex, ""},
		{"digest only", "6.5.0", "sha256:" + hex, "6.5.0+0123456789ab", "sha256:" + hex, ""},
		{"non-semver tag kept in the digest", "6.5.0", "latest@sha256:" + hex, "6.5.0+0123456789ab", "latest@sha256:" + hex, ""},
		{"tag is another version", "6.5.0", "6.6.0@sha256:" + hex, "", "", "artifact revision 6.6.0 does not match chart version 6.5.0"},
		{"short digest", "6.5.0", "6.5.0@sha256:0123", "", "", "invalid artifact revision sha256:0123"},
		{"invalid chart version", "six", "sha256:" + hex, "", "", "invalid chart version six"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, track := range []bool{true, false} {
				ch := &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: tc.version}}
				digest, err := mutateChartVersion(ch, tc.revision, track)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr {
						t.Fatalf("track %v: error %v, want %q", track, err, tc.wantErr)
					}
					continue
				}
				want := tc.wantVersion
				if !track {
					want = tc.version
				}
				if err != nil || digest != tc.wantDigest || ch.Metadata.Version != want {
					t.Errorf("track %v: got %q, %q, %v; want %q, %q", track, ch.Metadata.Version, digest, err, want, tc.wantDigest)
				}
			}
		})
	}
}

// TestChartTemplateSchema checks v1.7's CEL rules of spec.chart on the API
// server: kind OCIRepository needs url and refuses the HelmChart fields,
// kind HelmChart (the default) needs chart and sourceRef; HelmRelease YAML
// of both kinds, without version or reconcileStrategy, is accepted.
func TestChartTemplateSchema(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	hr := func(chart string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: schema, namespace: " + ns +
			"}\nspec:\n  interval: 10m\n  chart:\n" + chart
	}
	create := func(t *testing.T, doc string) error {
		t.Helper()
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		err := env.Client.Create(ctx, obj)
		if err == nil {
			_ = env.Client.Delete(ctx, obj)
		}
		return err
	}
	const oci = "    kind: OCIRepository\n    spec:\n      url: oci://ghcr.io/stefanprodan/charts/podinfo\n"
	rejected := []struct{ name, chart, msg string }{
		{"oci without url", "    kind: OCIRepository\n    spec: {ref: {tag: 6.5.0}}\n", "chart.spec.url must be set when chart.kind is 'OCIRepository'"},
		{"oci with chart", oci + "      chart: podinfo\n", "chart.spec.chart cannot be set when chart.kind is 'OCIRepository'"},
		{"oci with version", oci + "      version: 6.x\n", "chart.spec.version cannot be set when chart.kind is 'OCIRepository'"},
		{"oci with sourceRef", oci + "      sourceRef: {kind: HelmRepository, name: podinfo}\n", "chart.spec.sourceRef cannot be set when chart.kind is 'OCIRepository'"},
		{"oci with reconcileStrategy Revision", oci + "      reconcileStrategy: Revision\n", "chart.spec.reconcileStrategy cannot be set when chart.kind is 'OCIRepository'"},
		{"oci with valuesFiles", oci + "      valuesFiles: [values.yaml]\n", "chart.spec.valuesFiles cannot be set when chart.kind is 'OCIRepository'"},
		{"oci with ignoreMissingValuesFiles", oci + "      ignoreMissingValuesFiles: true\n", "chart.spec.ignoreMissingValuesFiles cannot be set when chart.kind is 'OCIRepository'"},
		{"helmchart with url", "    spec:\n      chart: podinfo\n      sourceRef: {kind: HelmRepository, name: podinfo}\n      url: oci://ghcr.io/x\n", "chart.spec.url requires chart.kind: 'OCIRepository'"},
		{"helmchart without sourceRef", "    spec: {chart: podinfo}\n", "chart.spec.chart and chart.spec.sourceRef must be set when chart.kind is not 'OCIRepository'"},
		{"unknown kind", "    kind: GitRepository\n    spec: {chart: podinfo, sourceRef: {kind: GitRepository, name: podinfo}}\n", "spec.chart.kind"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			err := create(t, hr(tc.chart))
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v; want Invalid naming %q", err, tc.msg)
			}
		})
	}
	accepted := []struct{ name, chart string }{
		{"oci with the OCIRepository fields", oci + "      version: '*'\n      reconcileStrategy: ChartVersion\n      ref: {semver: '>=6.0.0'}\n" +
			"      layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}\n" +
			"      secretRef: {name: ghcr}\n      interval: 5m\n      timeout: 30s\n      insecure: true\n"},
		{"helmchart without version and reconcileStrategy", "    spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: podinfo}}\n"},
		{"explicit kind HelmChart", "    kind: HelmChart\n    spec: {chart: podinfo, version: 6.x, sourceRef: {kind: HelmRepository, name: podinfo}}\n"},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			if err := create(t, hr(tc.chart)); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// ociRevisionDigest is a stand-in for the manifest digest of the artifact
// holding chart archive a (what an OCIRepository's revision names).
func ociRevisionDigest(a *meta.Artifact) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("manifest of "+a.Digest)))
}

// newOCIRepository creates an OCIRepository (nothing reconciles it in this
// suite) selecting the Helm chart layer, as Flux's docs recommend.
func newOCIRepository(t testing.TB, ns, name string) {
	t.Helper()
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.example/charts/podinfo", Interval: &metav1.Duration{Duration: time.Hour},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: HelmChartLayerMediaType, Operation: sourcev1.OCILayerCopy}}}
	if err := env.Client.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
}

// serveOCI gives OCIRepository ns/name the chart archive of a as its
// artifact (a copied Helm layer is the .tgz itself) with revision
// `<tag>@<digest>` and Ready=True, as source-controller would; it returns
// the revision.
func serveOCI(t testing.TB, ns, name, tag string, a *meta.Artifact) string {
	t.Helper()
	repo := &sourcev1.OCIRepository{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo); err != nil {
		t.Fatal(err)
	}
	oa := a.DeepCopy()
	oa.Path = fmt.Sprintf("ocirepository/%s/%s/%s.tgz", ns, name, strings.TrimPrefix(a.Digest, "sha256:"))
	oa.Revision = tag + "@" + ociRevisionDigest(a)
	repo.Status.ObservedGeneration = repo.Generation
	repo.Status.Artifact = signed(t, sourcev1.OCIRepositoryKind, repo, oa)
	repo.Status.URL = oa.URL
	apimeta.SetStatusCondition(&repo.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: meta.SucceededReason, Message: fmt.Sprintf("stored artifact for digest '%s'", oa.Revision), ObservedGeneration: repo.Generation})
	if err := env.Client.Status().Update(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	return oa.Revision
}

// testOCIRepositoryChartRef releases podinfo from a chartRef OCIRepository:
// the chart version carries the digest (lastAttemptedRevision, history,
// events), a new digest of the same version upgrades, and a tag that is not
// the chart's version is refused with ChartMutateError.
func testOCIRepositoryChartRef(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	a := podinfo(t, srv, "")
	newOCIRepository(t, ns, "podinfo")
	rev := serveOCI(t, ns, "podinfo", a.Revision, a)
	digest := strings.TrimPrefix(rev, a.Revision+"@")
	version := a.Revision + "+" + strings.TrimPrefix(digest, "sha256:")[:12]
	hr := newRelease(t, ns, "podinfo", "", func(hr *helmv2.HelmRelease) {
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "podinfo"}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, version))
	if hr.Status.LastAttemptedRevision != version || hr.Status.LastAttemptedRevisionDigest != digest || hr.Status.HelmChart != "" {
		t.Errorf("status: revision %q digest %q helmChart %q", hr.Status.LastAttemptedRevision, hr.Status.LastAttemptedRevisionDigest, hr.Status.HelmChart)
	}
	if s := hr.Status.History[0]; s.ChartVersion != version || s.OCIDigest != digest {
		t.Errorf("snapshot: %+v", s)
	}
	var evs corev1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, e := range evs.Items {
		if e.Reason == helmv2.InstallSucceededReason {
			seen = true
			if e.Annotations["helm.toolkit.fluxcd.io/oci-digest"] != digest || e.Annotations["helm.toolkit.fluxcd.io/revision"] != version {
				t.Errorf("event annotations: %v", e.Annotations)
			}
		}
	}
	if !seen {
		t.Error("no InstallSucceeded event")
	}

	// The same version pushed again with other content: a new digest, an upgrade.
	tgz := helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithAppVersion("9.9.9"))
	srv.Add(tgz) // replaces the first archive, as a re-push replaces the tag
	b := artifactOf(t, srv, tgz)
	rev2 := serveOCI(t, ns, "podinfo", a.Revision, b)
	digest2 := strings.TrimPrefix(rev2, a.Revision+"@")
	version2 := a.Revision + "+" + strings.TrimPrefix(digest2, "sha256:")[:12]
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/podinfo.v2 with chart podinfo@%s", ns, version2))
	if h := hr.Status.History; len(h) != 2 || h[0].OCIDigest != digest2 || h[1].OCIDigest != digest || h[1].Status != "superseded" {
		t.Errorf("history: %+v", h)
	}

	// A tag naming another version than the chart's.
	serveOCI(t, ns, "podinfo", "9.9.9", b)
	waitFor(t, hr, "ChartMutateError", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == helmv2.ChartMutateErrorReason &&
			c.Message == fmt.Sprintf("artifact revision 9.9.9 does not match chart version %s", a.Revision)
	})
}

// testChartTemplateOCIRepository releases podinfo from spec.chart kind
// OCIRepository: the generated OCIRepository `<ns>-<name>` (HR namespace,
// Flux's labels, the Helm layer copied, the HelmRelease's interval),
// status.helmChart `OCIRepository/<ns>/<name>`, the install from its
// artifact; switching to kind HelmChart deletes it (and a HelmChart is
// generated, then deleted on a switch to a chartRef), and so does deleting
// a HelmRelease that generated one.
func testChartTemplateOCIRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	a := podinfo(t, srv, "")
	template := func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = &helmv2.HelmChartTemplate{Kind: sourcev1.OCIRepositoryKind,
			ObjectMeta: &helmv2.HelmChartTemplateObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: helmv2.HelmChartTemplateSpec{OCIRepositorySpec: sourcev1.OCIRepositorySpec{
				URL: "oci://registry.example/charts/podinfo", Reference: &sourcev1.OCIRepositoryRef{SemVer: ">=6.0.0"}}}}
	}
	hr := newRelease(t, ns, "podinfo", "", template)
	generated := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + "-podinfo"}}
	waitFor(t, hr, "status.helmChart and SourceNotReady", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Reason == helmv2.SourceNotReadyReason && hr.Status.HelmChart == "OCIRepository/"+ns+"/"+ns+"-podinfo"
	})
	if c := cond(hr, meta.ReadyCondition); c.Message != fmt.Sprintf("OCIRepository '%s/%s-podinfo' is not ready: latest generation of object has not been reconciled", ns, ns) {
		t.Errorf("SourceNotReady message %q", c.Message)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(generated), generated); err != nil {
		t.Fatal(err)
	}
	s := generated.Spec
	if generated.Labels[NameLabel] != "podinfo" || generated.Labels[NamespaceLabel] != ns || generated.Labels["team"] != "a" ||
		s.URL != "oci://registry.example/charts/podinfo" || s.Reference == nil || s.Reference.SemVer != ">=6.0.0" ||
		s.LayerSelector == nil || *s.LayerSelector != (sourcev1.OCILayerSelector{MediaType: HelmChartLayerMediaType, Operation: "copy"}) ||
		s.Interval == nil || s.Interval.Duration != time.Hour {
		t.Errorf("generated OCIRepository: %v %+v", generated.Labels, s)
	}
	rev := serveOCI(t, ns, generated.Name, a.Revision, a)
	version := a.Revision + "+" + strings.TrimPrefix(rev, a.Revision+"@sha256:")[:12]
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, version))

	// Switching the template to kind HelmChart deletes the generated
	// OCIRepository and generates the HelmChart.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo",
			SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}}}
	})
	testenv.WaitGone(t, env.Client, generated, "the generated OCIRepository after the switch to kind HelmChart")
	waitFor(t, hr, "status.helmChart of the HelmChart", func() bool { return hr.Status.HelmChart == ns+"/"+ns+"-podinfo" })
	serveChart(t, ns, ns+"-podinfo", a)
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/podinfo.v2 with chart podinfo@%s", ns, a.Revision))
	if hr.Status.LastAttemptedRevisionDigest != "" || hr.Status.History[0].OCIDigest != "" || hr.Status.History[1].OCIDigest == "" {
		t.Errorf("digests after the switch to a HelmChart: %q, history %+v", hr.Status.LastAttemptedRevisionDigest, hr.Status.History)
	}

	// Switching to a chartRef deletes the generated HelmChart.
	newOCIRepository(t, ns, "shared")
	serveOCI(t, ns, "shared", a.Revision, a)
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = nil
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "shared"}
	})
	testenv.WaitGone(t, env.Client, &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + "-podinfo"}},
		"the generated HelmChart after the switch to chartRef")
	waitFor(t, hr, "Ready at the new generation without status.helmChart", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation && hr.Status.HelmChart == ""
	})

	// Deleting a HelmRelease deletes the OCIRepository it generated.
	other := newRelease(t, ns, "other", "", template)
	otherRepo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns + "-other"}}
	waitFor(t, other, "status.helmChart", func() bool { return other.Status.HelmChart == "OCIRepository/"+ns+"/"+ns+"-other" })
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(otherRepo), otherRepo); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, other, "the deleted HelmRelease")
	testenv.WaitGone(t, env.Client, otherRepo, "the OCIRepository of the deleted HelmRelease")
}
