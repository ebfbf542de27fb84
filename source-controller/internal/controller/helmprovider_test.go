package controller

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newOCIHelmRepository creates a HelmRepository of type oci at url.
func newOCIHelmRepository(t *testing.T, ns, name, url string, labels map[string]string, mutate func(*sourcev1.HelmRepository)) {
	t.Helper()
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: sourcev1.HelmRepositorySpec{URL: url, Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
			Interval: metav1.Duration{Duration: time.Hour}}}
	if mutate != nil {
		mutate(hr)
	}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
}

// newPodinfoChart creates a HelmChart of podinfo from the HelmRepository hr.
func newPodinfoChart(t *testing.T, ns, name, hr string, labels map[string]string) *sourcev1.HelmChart {
	t.Helper()
	return newHelmChart(t, ns, name, func(o *sourcev1.HelmChart) {
		o.Labels = labels
		o.Spec.Chart = "podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: hr}
	})
}

// metadataFailure is the message of a metadata server answering 500.
func metadataFailure(md *cloudfake.GCEMetadata) string {
	return "failed to get credential from 'gcp': failed to get access token for artifact registry: metadata server http://" +
		md.Host + "/computeMetadata/v1/instance/service-accounts/default/token: 500 Internal Server Error"
}

// checkHelmAuthFailure: Flux's reason, retried (not Stalled), the token
// service's answer not quoted.
func checkHelmAuthFailure(t *testing.T, got *sourcev1.HelmChart) {
	t.Helper()
	if stalled(got) {
		t.Errorf("a token service failure stalls: %+v", got.Status.Conditions)
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); strings.Contains(c.Message, "must-not-leak") {
		t.Errorf("the token service's answer reached the status: %s", c.Message)
	}
}

// TestHelmChartOCIProviderFailures: an OCI HelmRepository with provider
// gcp and no secretRef asks the metadata server; its error is Flux's
// AuthenticationFailed with a stable message that quotes nothing of the
// answer, a registry that is not Google's is refused with Flux's message,
// and a secretRef wins over the provider (as Flux).
func TestHelmChartOCIProviderFailures(t *testing.T) {
	md := cloudfake.StartGCEMetadata("ya29.in-process-helm")
	defer md.Close()
	md.FailWith(http.StatusInternalServerError)
	t.Setenv("GCE_METADATA_HOST", md.Host)
	ns := newNamespace(t)
	withGCP := func(hr *sourcev1.HelmRepository) { hr.Spec.Provider = sourcev1.OCIProviderGCP }

	newOCIHelmRepository(t, ns, "gar", "oci://europe-west1-docker.pkg.dev/proj/charts", nil, withGCP)
	got := waitChart(t, newPodinfoChart(t, ns, "gar", "gar", nil), "AuthenticationFailed",
		failedWith(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, metadataFailure(md)))
	checkHelmAuthFailure(t, got)

	newOCIHelmRepository(t, ns, "local", "oci://127.0.0.1:1/charts", nil, withGCP)
	got = waitChart(t, newPodinfoChart(t, ns, "local", "local", nil), "invalid GCP registry",
		failedWith(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason,
			"failed to get credential from 'gcp': invalid GCP registry: '127.0.0.1:1'. must match "))
	checkHelmAuthFailure(t, got)

	reg := helmtest.NewOCIRegistry(t, helmtest.WithRegistryAuth("user", "pass"))
	reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	if err := env.Client.Create(context.Background(), secret(ns, "auth", map[string]string{"username": "user", "password": "pass"})); err != nil {
		t.Fatal(err)
	}
	newOCIHelmRepository(t, ns, "with-secret", reg.URL(), nil, func(hr *sourcev1.HelmRepository) {
		withGCP(hr)
		hr.Spec.SecretRef = &meta.LocalObjectReference{Name: "auth"}
	})
	waitChart(t, newPodinfoChart(t, ns, "with-secret", "with-secret", nil), "Ready",
		readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	if n := md.Issued(); n != 0 {
		t.Errorf("%d tokens issued, want 0", n)
	}
}

// TestBinaryHelmChartOCIProviderGCP: the built binary pulls a chart from
// an OCI HelmRepository with provider gcp and no secretRef with the
// metadata server's token (a local registry that takes only that token,
// behind the environment's HTTP proxy answering for the Artifact Registry
// host); while the metadata server fails, the chart is AuthenticationFailed
// and retried until it answers. An HTTP HelmRepository's provider is
// ignored, as Flux: aws on a host that is not ECR's still serves its chart.
func TestBinaryHelmChartOCIProviderGCP(t *testing.T) {
	const host = "europe-west1-docker.pkg.dev"
	md := cloudfake.StartGCEMetadata("ya29.binary-helm")
	defer md.Close()
	md.FailWith(http.StatusInternalServerError)
	reg := helmtest.NewOCIRegistry(t, helmtest.WithRegistryAuth(cloudauth.GCPRegistryUser, "ya29.binary-helm"))
	tgz := helmtest.PackageChart(t, helmtest.PodinfoChartDir(t))
	reg.Push(t, tgz)
	srv := helmtest.NewChartServer(t)
	srv.Add(tgz)
	t.Setenv("GCE_METADATA_HOST", md.Host)
	t.Setenv("HTTP_PROXY", newHostProxy(t, host, reg.Host()).URL)
	runBinaryShard(t, "binary-helm-gcp")
	label := map[string]string{shardKey: "binary-helm-gcp"}
	ns := newNamespace(t)

	newOCIHelmRepository(t, ns, "gar", "oci://"+host+"/charts", label, func(hr *sourcev1.HelmRepository) {
		hr.Spec.Provider = sourcev1.OCIProviderGCP
	})
	obj := newPodinfoChart(t, ns, "gar", "gar", label)
	got := waitChart(t, obj, "AuthenticationFailed",
		failedWith(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason, metadataFailure(md)))
	checkHelmAuthFailure(t, got)
	md.FailWith(0)
	got = waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	if data, want := checkChartArtifact(t, got, "6.14.1"), mustRead(t, tgz); !bytes.Equal(data, want) {
		t.Error("the pulled artifact differs from the pushed archive")
	}
	if n := md.Issued(); n == 0 {
		t.Error("no token issued to the binary")
	}

	newHelmRepository(t, ns, "http", srv.URL(), func(hr *sourcev1.HelmRepository) {
		hr.Labels = label
		hr.Spec.Provider = sourcev1.OCIProviderAWS
	})
	waitChart(t, newPodinfoChart(t, ns, "http", "http", label), "Ready",
		readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
