package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestOCIRepositoryChartSources releases podinfo's chart, pushed as `helm
// push` does to an in-process registry, from OCIRepositories reconciled by
// the built source-controller: one HelmRelease names an OCIRepository in
// spec.chartRef (Flux's recommended Helm layer selector), the other has a
// spec.chart template of kind OCIRepository. Both install with the chart
// version carrying the manifest digest, are upgraded when a new chart
// version is pushed, and the generated OCIRepository goes with its
// HelmRelease.
func TestOCIRepositoryChartSources(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	reg := helmtest.NewOCIRegistry(t)
	v1 := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	ns := testenv.NewNamespace(t, env.Client, "hr-oci-")
	url := reg.URL() + "/" + v1.Name

	create(t, &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
		Spec: sourcev1.OCIRepositorySpec{URL: url, Reference: &sourcev1.OCIRepositoryRef{SemVer: ">=0.1.0"}, Insecure: true,
			Interval:      &metav1.Duration{Duration: time.Hour},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: sourcev1.OCILayerCopy}}})
	byRef := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "by-ref", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "podinfo"}}}
	byTemplate := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "by-template", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Kind: sourcev1.OCIRepositoryKind, Spec: helmv2.HelmChartTemplateSpec{
				OCIRepositorySpec: sourcev1.OCIRepositorySpec{URL: url, Reference: &sourcev1.OCIRepositoryRef{SemVer: ">=0.1.0"}, Insecure: true}}}}}
	create(t, byRef)
	create(t, byTemplate)
	generated := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Name: ns + "-by-template", Namespace: ns}}

	// released waits for hr released at revision v: Ready with Flux's
	// message for action, the chart version `<version>+<12 hex of the
	// manifest digest>`, the digest in status and history.
	released := func(t *testing.T, hr *helmv2.HelmRelease, action string, rev int, v helmtest.PushedChart) {
		t.Helper()
		version := v.Version + "+" + v.Digest[len("sha256:"):][:12]
		msg := fmt.Sprintf("Helm %s succeeded for release %s/%s.v%d with chart podinfo@%s", action, ns, hr.Name, rev, version)
		waitFor(t, hr, msg, func() bool {
			c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionTrue && c.Message == msg && hr.Status.ObservedGeneration == hr.Generation
		})
		if hr.Status.LastAttemptedRevision != version || hr.Status.LastAttemptedRevisionDigest != v.Digest ||
			hr.Status.History[0].ChartVersion != version || hr.Status.History[0].OCIDigest != v.Digest {
			t.Errorf("%s: lastAttemptedRevision %q, lastAttemptedRevisionDigest %q, history[0] %+v; want %s, %s",
				hr.Name, hr.Status.LastAttemptedRevision, hr.Status.LastAttemptedRevisionDigest, hr.Status.History[0], version, v.Digest)
		}
	}
	released(t, byRef, "install", 1, v1)
	released(t, byTemplate, "install", 1, v1)
	if byRef.Status.HelmChart != "" {
		t.Errorf("by-ref: status.helmChart %q, want none", byRef.Status.HelmChart)
	}
	if want := "OCIRepository/" + ns + "/" + generated.Name; byTemplate.Status.HelmChart != want {
		t.Errorf("by-template: status.helmChart %q, want %q", byTemplate.Status.HelmChart, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(generated), generated); err != nil {
		t.Fatal(err)
	}
	if a := generated.Status.Artifact; a == nil || a.Revision != v1.Version+"@"+v1.Digest ||
		generated.Spec.LayerSelector == nil || generated.Spec.LayerSelector.Operation != sourcev1.OCILayerCopy {
		t.Errorf("generated OCIRepository: spec %+v, artifact %+v", generated.Spec, a)
	}

	// A new chart version pushed: both sources pick it up on request, both
	// releases are upgraded.
	v2 := reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("99.0.0")))
	for _, name := range []string{"podinfo", generated.Name} {
		repo := &sourcev1.OCIRepository{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, repo); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(repo.DeepCopy())
		if repo.Annotations == nil {
			repo.Annotations = map[string]string{}
		}
		repo.Annotations[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
		if err := env.Client.Patch(ctx, repo, patch); err != nil {
			t.Fatal(err)
		}
	}
	released(t, byRef, "upgrade", 2, v2)
	released(t, byTemplate, "upgrade", 2, v2)

	// Deleting the HelmRelease deletes the OCIRepository it generated.
	if err := env.Client.Delete(ctx, byTemplate); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, generated, "the OCIRepository generated for the deleted HelmRelease")
}
