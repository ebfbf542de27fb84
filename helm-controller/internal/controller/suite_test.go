package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env *testenv.Environment
	// exe is the helm-controller binary built from this workspace.
	exe string
)

// shardKey is Flux's sharding label: the suite's shared binary takes the
// objects without it, a test running a binary of its own labels its objects.
const shardKey = "sharding.fluxcd.io/key"

// binaryFlags are the flags of the binaries under test: short waits.
var binaryFlags = []string{"--concurrent=4", "--min-retry-delay=200ms", "--max-retry-delay=2s",
	"--requeue-dependency=1s", "--http-retry=1", "--log-level=debug"}

// TestMain runs the tests on the full profile (fake nodes make Deployments
// Available) against the helm-controller binary built once; each test
// serves its charts (helmtest.ChartServer) as source-controller serves
// HelmChart artifacts and writes the HelmChart's status itself.
func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}}, buildBinary)
}

func buildBinary(*testenv.Environment) (func(), error) {
	work, err := os.MkdirTemp("", "eddy-hc-test-")
	if err != nil {
		return nil, err
	}
	if exe, err = testenv.BuildController(ControllerName, work); err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	return func() { os.RemoveAll(work) }, nil
}

// podinfo packages the testdata's podinfo chart with version (its own
// when "") with helmtest, serves it from srv and returns the artifact
// source-controller would record for it.
func podinfo(t testing.TB, srv *helmtest.ChartServer, version string) *meta.Artifact {
	t.Helper()
	var opts []helmtest.PackageOption
	if version != "" {
		opts = append(opts, helmtest.WithVersion(version))
	}
	tgz := helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), opts...)
	srv.Add(tgz)
	return artifactOf(t, srv, tgz)
}

// artifactOf is the artifact of chart archive tgz served by srv.
func artifactOf(t testing.TB, srv *helmtest.ChartServer, tgz string) *meta.Artifact {
	t.Helper()
	ch, err := loader.Load(tgz)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(tgz)
	return &meta.Artifact{Path: "helmchart/" + name, URL: srv.URL() + "/" + name, Revision: ch.Metadata.Version,
		Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(b)), LastUpdateTime: metav1.Now(), Size: ptr(int64(len(b)))}
}

// chartFixture is a test's namespace and HelmChart "podinfo" in it, Ready
// with podinfo's chart served by the test's own chart server.
func chartFixture(t testing.TB) (ns string, srv *helmtest.ChartServer, a *meta.Artifact) {
	t.Helper()
	ns = newNamespace(t)
	srv = helmtest.NewChartServer(t)
	a = podinfo(t, srv, "")
	newHelmChart(t, ns, "podinfo")
	serveChart(t, ns, "podinfo", a)
	return ns, srv, a
}

func ptr[T any](v T) *T { return &v }

// signed returns a signed for src of kind with the cluster's key, as
// source-controller would publish it: the tests' chart servers stand in for
// source-controller's.
func signed(t testing.TB, kind string, src client.Object, a *meta.Artifact) *meta.Artifact {
	t.Helper()
	owner := artifact.Owner{Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName()}
	return artifacttest.SignInCluster(t, env.Client, artifact.KeyNamespace(), owner, a)
}

// newHelmChart creates a HelmChart (nothing reconciles it in this suite).
func newHelmChart(t testing.TB, ns, name string) *sourcev1.HelmChart {
	t.Helper()
	hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.HelmChartSpec{Chart: "podinfo", Version: "*", Interval: metav1.Duration{Duration: time.Hour},
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "podinfo"}}}
	if err := env.Client.Create(context.Background(), hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// serveChart gives HelmChart ns/name the artifact a and Ready=True, as
// source-controller would.
func serveChart(t testing.TB, ns, name string, a *meta.Artifact) {
	t.Helper()
	hc := &sourcev1.HelmChart{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, hc); err != nil {
		t.Fatal(err)
	}
	hc.Status.ObservedGeneration = hc.Generation
	hc.Status.Artifact = signed(t, sourcev1.HelmChartKind, hc, a)
	hc.Status.URL = a.URL
	apimeta.SetStatusCondition(&hc.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "ChartPullSucceeded", Message: fmt.Sprintf("pulled 'podinfo' chart with version '%s'", a.Revision),
		ObservedGeneration: hc.Generation})
	if err := env.Client.Status().Update(context.Background(), hc); err != nil {
		t.Fatal(err)
	}
}

// newRelease creates a HelmRelease of the HelmChart chart in ns.
func newRelease(t testing.TB, ns, name, chart string, mutate func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	t.Helper()
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour}}}
	if chart != "" {
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: chart}
	}
	if mutate != nil {
		mutate(hr)
	}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	return hr
}

func jsonValues(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func newNamespace(t testing.TB) string { return testenv.NewNamespace(t, env.Client, "hr-") }

func waitFor(t testing.TB, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, env.Client, obj, what, cond)
}

func cond(hr *helmv2.HelmRelease, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(hr.Status.Conditions, typ)
}

// waitReady waits until Ready=True at the generation with reason and
// message, and returns it.
func waitReady(t testing.TB, hr *helmv2.HelmRelease, reason, msg string) {
	t.Helper()
	waitFor(t, hr, fmt.Sprintf("Ready=True %s %q", reason, msg), func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && c.Message == msg &&
			hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
}

// releaseSecrets lists the Helm storage Secrets of release name in ns.
func releaseSecrets(t testing.TB, ns, name string) []corev1.Secret {
	t.Helper()
	var l corev1.SecretList
	if err := env.Client.List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func kubeEvents(t testing.TB, ns, name, reason string) []string {
	t.Helper()
	return testenv.KubeEvents(t, env.Client, ns, name, reason)
}
