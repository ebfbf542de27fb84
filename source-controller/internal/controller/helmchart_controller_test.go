package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// podinfoFiles returns the podinfo chart's files under prefix, for a Git
// repository.
func podinfoFiles(t testing.TB, prefix string) map[string]string {
	t.Helper()
	dir := helmtest.PodinfoChartDir(t)
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[prefix+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func newHelmChart(t testing.TB, ns, name string, mutate func(*sourcev1.HelmChart)) *sourcev1.HelmChart {
	t.Helper()
	obj := &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       sourcev1.HelmChartSpec{Interval: metav1.Duration{Duration: time.Hour}},
	}
	mutate(obj)
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// waitChart reads the HelmChart until its Ready condition is final for the
// current generation and satisfies cond; the status must conform.
func waitChart(t testing.TB, obj *sourcev1.HelmChart, what string, cond func(*sourcev1.HelmChart) bool) *sourcev1.HelmChart {
	t.Helper()
	got := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	testenv.WaitFor(t, env.Client, got, what, func() bool {
		c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.ObservedGeneration == got.Generation && c.Status != metav1.ConditionUnknown && cond(got)
	})
	testenv.CheckStatus(t, got)
	return got
}

func readyWith(reason, msg string) func(*sourcev1.HelmChart) bool {
	return func(o *sourcev1.HelmChart) bool {
		c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		return c.Status == metav1.ConditionTrue && c.Reason == reason && c.Message == msg
	}
}

func failedWith(condition, reason, msg string) func(*sourcev1.HelmChart) bool {
	return func(o *sourcev1.HelmChart) bool {
		c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		f := apimeta.FindStatusCondition(o.Status.Conditions, condition)
		return c.Status == metav1.ConditionFalse && c.Reason == reason && strings.Contains(c.Message, msg) && f != nil && f.Reason == reason
	}
}

func stalled(o *sourcev1.HelmChart) bool {
	return apimeta.IsStatusConditionTrue(o.Status.Conditions, meta.StalledCondition)
}

// checkChartArtifact downloads the HelmChart's artifact (digest checked),
// loads it as a chart and checks name and version; status.url serves the
// same bytes.
func checkChartArtifact(t testing.TB, o *sourcev1.HelmChart, version string) []byte {
	t.Helper()
	a := o.Status.Artifact
	want := fmt.Sprintf("helmchart/%s/%s/podinfo-%s.tgz", o.Namespace, o.Name, version)
	if a == nil || a.Path != want || a.Revision != version {
		t.Fatalf("artifact %+v, want path %s revision %s", a, want, version)
	}
	data := download(t, a)
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the artifact is not a chart: %v", err)
	}
	if c.Name() != "podinfo" || c.Metadata.Version != version {
		t.Errorf("artifact chart %s %s, want podinfo %s", c.Name(), c.Metadata.Version, version)
	}
	if !strings.HasSuffix(o.Status.URL, fmt.Sprintf("/helmchart/%s/%s/latest.tar.gz", o.Namespace, o.Name)) {
		t.Errorf("status.url %s", o.Status.URL)
	}
	link := download(t, &meta.Artifact{URL: o.Status.URL, Digest: a.Digest, Size: a.Size})
	if !bytes.Equal(link, data) {
		t.Error("latest.tar.gz does not serve the artifact")
	}
	return data
}

// TestHelmChartFromGitRepository packages podinfo's chart from a
// GitRepository artifact: Flux's Ready message and reason, the artifact
// `podinfo-<version>.tgz` with the latest.tar.gz link, the
// NewArtifact-type event, no re-store when nothing changed, then
// reconcileStrategy Revision with valuesFiles.
func TestHelmChartFromGitRepository(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, podinfoFiles(t, "charts/podinfo/"))
	git := waitReady(t, newGitRepository(t, ns, "podinfo", r.URL(), nil))
	obj := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "./charts/podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "podinfo"}
	})
	msg := "packaged 'podinfo' chart with version '6.14.1'"
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPackageSucceededReason, msg))
	checkChartArtifact(t, got, "6.14.1")
	if got.Status.ObservedSourceArtifactRevision != git.Status.Artifact.Revision || got.Status.ObservedChartName != "podinfo" {
		t.Errorf("observed source %q chart %q", got.Status.ObservedSourceArtifactRevision, got.Status.ObservedChartName)
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.ArtifactInStorageCondition); c == nil || c.Message != msg {
		t.Errorf("ArtifactInStorage %+v", c)
	}
	if evs := sink.find(ns, "podinfo", sourcev1.ChartPackageSucceededReason); len(evs) != 1 || evs[0].Message != msg ||
		evs[0].Metadata["source.toolkit.fluxcd.io/revision"] != "6.14.1" || evs[0].Metadata["source.toolkit.fluxcd.io/digest"] != got.Status.Artifact.Digest {
		t.Errorf("new artifact events %+v", evs)
	}

	// Nothing changed: the stored artifact stays, no new event.
	again := &sourcev1.HelmChart{}
	*again = *got
	testenv.RequestReconcile(t, env.Client, again, func() string { return again.Status.LastHandledReconcileAt })
	if !again.Status.Artifact.LastUpdateTime.Equal(&got.Status.Artifact.LastUpdateTime) || again.Status.Artifact.Digest != got.Status.Artifact.Digest {
		t.Errorf("artifact re-stored without a change: %v → %v", got.Status.Artifact.LastUpdateTime, again.Status.Artifact.LastUpdateTime)
	}
	if evs := sink.find(ns, "podinfo", sourcev1.ChartPackageSucceededReason); len(evs) != 1 {
		t.Errorf("%d build events after an unchanged reconcile", len(evs))
	}

	update(t, obj, func(o *sourcev1.HelmChart) {
		o.Spec.ReconcileStrategy = sourcev1.ReconcileStrategyRevision
		o.Spec.ValuesFiles = []string{"charts/podinfo/values.yaml", "charts/podinfo/values-prod.yaml"}
	})
	hash := git.Status.Artifact.Revision[strings.LastIndex(git.Status.Artifact.Revision, ":")+1:]
	version := fmt.Sprintf("6.14.1+%s.2", hash[:12])
	msg = fmt.Sprintf("packaged 'podinfo' chart with version '%s' and merged values files [charts/podinfo/values.yaml charts/podinfo/values-prod.yaml]", version)
	got = waitChart(t, obj, "Ready with Revision metadata", readyWith(sourcev1.ChartPackageSucceededReason, msg))
	checkChartArtifact(t, got, version)
}

// TestHelmChartFailures: each bad input settles to Flux's condition and
// reason with a stable message.
func TestHelmChartFailures(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, podinfoFiles(t, "charts/podinfo/"))
	waitReady(t, newGitRepository(t, ns, "podinfo", r.URL(), nil))
	newGitRepository(t, ns, "suspended", r.URL(), func(o *sourcev1.GitRepository) { o.Spec.Suspend = true })
	// Never reached: the verify cases are refused before any registry request.
	if err := env.Client.Create(context.Background(), &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci"},
		Spec: sourcev1.HelmRepositorySpec{URL: "oci://127.0.0.1:1/charts", Type: sourcev1.HelmRepositoryTypeOCI, Interval: metav1.Duration{Duration: time.Hour}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		mutate    func(*sourcev1.HelmChart)
		condition string
		reason    string
		msg       string
		stalled   bool
	}{
		{"no-artifact", func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "suspended"}
		}, sourcev1.FetchFailedCondition, sourcev1.NoSourceArtifactReason, "no artifact available for GitRepository source 'suspended'", false},
		{"missing-source", func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "absent"}
		}, sourcev1.FetchFailedCondition, sourcev1.SourceUnavailableReason, `failed to get source: GitRepository.source.toolkit.fluxcd.io "absent" not found`, false},
		{"missing-bucket", func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.BucketKind, Name: "b"}
		}, sourcev1.FetchFailedCondition, sourcev1.SourceUnavailableReason, `failed to get source: Bucket.source.toolkit.fluxcd.io "b" not found`, false},
		{"verify", func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
			o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "notation", SecretRef: &meta.LocalObjectReference{Name: "absent"}}
		}, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, `failed to verify the signature using provider 'notation': secrets "absent" not found`, false},
		{"keyless", func(o *sourcev1.HelmChart) {
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
			o.Spec.Verify = &sourcev1.HelmChartVerification{Provider: "cosign"}
		}, sourcev1.SourceVerifiedCondition, sourcev1.VerificationErrorReason, "keyless verification (spec.verify without secretRef) is not supported by Eddy yet", true},
		{"not-a-chart", func(o *sourcev1.HelmChart) { o.Spec.Chart = "charts/podinfo/templates" },
			sourcev1.FetchFailedCondition, sourcev1.InvalidChartReferenceReason, "invalid chart reference: Chart.yaml file is missing", true},
		{"traversal", func(o *sourcev1.HelmChart) { o.Spec.Chart = "../../etc" },
			sourcev1.FetchFailedCondition, sourcev1.InvalidChartReferenceReason, "invalid chart reference: path '../../etc' leaves the source artifact", true},
		{"values-missing", func(o *sourcev1.HelmChart) { o.Spec.ValuesFiles = []string{"nope.yaml"} },
			sourcev1.BuildFailedCondition, sourcev1.ValuesFilesErrorReason, "values files merge error: no values file found at path 'nope.yaml'", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := newHelmChart(t, ns, tc.name, func(o *sourcev1.HelmChart) {
				o.Spec.Chart = "charts/podinfo"
				o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "podinfo"}
				tc.mutate(o)
			})
			got := waitChart(t, obj, tc.reason, failedWith(tc.condition, tc.reason, tc.msg))
			if stalled(got) != tc.stalled {
				t.Errorf("stalled %v, want %v: %+v", stalled(got), tc.stalled, got.Status.Conditions)
			}
			if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); strings.Contains(c.Message, os.TempDir()) {
				t.Errorf("message names a temporary path: %s", c.Message)
			}
		})
	}
}

// storeIndex stands in for the HelmRepository reconciler: it stores the
// chart server's index as the HelmRepository's artifact (indented JSON, as
// Flux stores it) and records it in status.
func storeIndex(t testing.TB, st *artifact.Storage, c client.Client, hr *sourcev1.HelmRepository, index []byte) {
	t.Helper()
	idx := &helmrepo.IndexFile{}
	if err := yaml.Unmarshal(index, idx); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	rev := fmt.Sprintf("sha256:%x", sha256.Sum256(index))
	a, err := st.Copy(artifact.ObjectDir(sourcev1.HelmRepositoryKind, hr.Namespace, hr.Name), "index-"+rev[7:]+".yaml", rev, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(hr.DeepCopy())
	// Signed as source-controller would (with the cluster's key).
	hr.Status.Artifact = artifacttest.SignInCluster(t, c, artifact.KeyNamespace(),
		artifact.Owner{Kind: sourcev1.HelmRepositoryKind, Namespace: hr.Namespace, Name: hr.Name}, a)
	if err := c.Status().Patch(context.Background(), hr, patch); err != nil {
		t.Fatal(err)
	}
}

// TestHelmChartFromHTTPHelmRepository pulls podinfo from a chart server
// through the HelmRepository's stored index, with basic auth.
func TestHelmChartFromHTTPHelmRepository(t *testing.T) {
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t, helmtest.WithBasicAuth("user", "pass"))
	tgz := helmtest.PackageChart(t, helmtest.PodinfoChartDir(t))
	srv.Add(tgz)
	srv.Add(helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.15.0-rc.1")))
	if err := env.Client.Create(context.Background(), secret(ns, "auth", map[string]string{"username": "user", "password": "pass"})); err != nil {
		t.Fatal(err)
	}
	// Suspended: the suite's HelmRepository reconciler leaves it alone, so
	// storeIndex decides when its index artifact appears.
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: sourcev1.HelmRepositorySpec{URL: srv.URL(), Interval: metav1.Duration{Duration: time.Hour}, SecretRef: &meta.LocalObjectReference{Name: "auth"},
			Suspend: true}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	obj := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "podinfo"
		o.Spec.Version = "6.x"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "podinfo"}
	})
	waitChart(t, obj, "NoSourceArtifact", failedWith(sourcev1.FetchFailedCondition, sourcev1.NoSourceArtifactReason, "no artifact available for HelmRepository source 'podinfo'"))
	// The index artifact appearing re-queues the chart (watch on the
	// HelmRepository), well before the 30s dependency wait.
	storeIndex(t, storage, env.Client, hr, srv.Index())
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	data := checkChartArtifact(t, got, "6.14.1")
	want, _ := os.ReadFile(tgz)
	if !bytes.Equal(data, want) {
		t.Error("the pulled artifact differs from the served archive")
	}
	if got.Status.ObservedSourceArtifactRevision != hr.Status.Artifact.Revision {
		t.Errorf("observed source revision %q, want %q", got.Status.ObservedSourceArtifactRevision, hr.Status.Artifact.Revision)
	}

	// A new index revision with a newer matching version: the chart (interval
	// 1h) is re-queued by the HelmRepository's artifact change alone.
	srv.Add(helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.15.0")))
	storeIndex(t, storage, env.Client, hr, srv.Index())
	got = waitChart(t, obj, "Ready at 6.15.0", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.15.0'"))
	checkChartArtifact(t, got, "6.15.0")
	if got.Status.ObservedSourceArtifactRevision != hr.Status.Artifact.Revision {
		t.Errorf("observed source revision %q, want %q", got.Status.ObservedSourceArtifactRevision, hr.Status.Artifact.Revision)
	}
}

// TestHelmChartDependencies packages a chart from Git whose remote
// dependencies come from a HelmRepository of the namespace with the
// dependency's URL (its stored index and credentials) and from a
// repository no HelmRepository describes (fetched anonymously).
func TestHelmChartDependencies(t *testing.T) {
	ns := newNamespace(t)
	private := helmtest.NewChartServer(t, helmtest.WithBasicAuth("user", "pass"))
	private.Add(helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	public := helmtest.NewChartServer(t)
	public.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "greeter", "1.2.3")))
	if err := env.Client.Create(context.Background(), secret(ns, "auth", map[string]string{"username": "user", "password": "pass"})); err != nil {
		t.Fatal(err)
	}
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "private"},
		Spec: sourcev1.HelmRepositorySpec{URL: private.URL() + "/", Interval: metav1.Duration{Duration: time.Hour}, SecretRef: &meta.LocalObjectReference{Name: "auth"}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	storeIndex(t, storage, env.Client, hr, private.Index())
	r := newRepo(t, map[string]string{
		"app/Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: podinfo\n  alias: web\n  version: \"6.x\"\n  repository: %s\n- name: greeter\n  version: \"~1.2\"\n  repository: %s\n",
			private.URL(), public.URL()),
		"app/values.yaml": "web:\n  replicaCount: 2\n",
	})
	waitReady(t, newGitRepository(t, ns, "app", r.URL(), nil))
	obj := newHelmChart(t, ns, "app", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "app"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}
	})
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPackageSucceededReason, "packaged 'app' chart with version '0.1.0'"))
	c, err := loader.LoadArchive(bytes.NewReader(download(t, got.Status.Artifact)))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]string{}
	for _, d := range c.Dependencies() {
		deps[d.Name()] = d.Metadata.Version
	}
	if len(deps) != 2 || deps["web"] != "6.14.1" || deps["greeter"] != "1.2.3" {
		t.Errorf("packaged dependencies %v, want web (podinfo) 6.14.1 and greeter 1.2.3", deps)
	}
	if private.Requests().Unauthorized != 0 {
		t.Errorf("%d unauthorized requests: the HelmRepository's credentials were not used", private.Requests().Unauthorized)
	}
	if evs := sink.find(ns, "app", sourcev1.ChartPackageSucceededReason); len(evs) != 1 {
		t.Errorf("events %+v", evs)
	}
}

// TestHelmChartFromOCIHelmRepository pulls podinfo from an in-process OCI
// registry with basic auth, by the digest its tag resolves to.
func TestHelmChartFromOCIHelmRepository(t *testing.T) {
	ns := newNamespace(t)
	reg := helmtest.NewOCIRegistry(t, helmtest.WithRegistryAuth("user", "pass"))
	tgz := helmtest.PackageChart(t, helmtest.PodinfoChartDir(t))
	reg.Push(t, tgz)
	reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t), helmtest.WithVersion("6.13.0")))
	if err := env.Client.Create(context.Background(), secret(ns, "auth", map[string]string{"username": "user", "password": "pass"})); err != nil {
		t.Fatal(err)
	}
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci"},
		Spec: sourcev1.HelmRepositorySpec{URL: reg.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
			Interval: metav1.Duration{Duration: time.Hour}, SecretRef: &meta.LocalObjectReference{Name: "auth"}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	obj := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
	})
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"))
	data := checkChartArtifact(t, got, "6.14.1")
	if want, _ := os.ReadFile(tgz); !bytes.Equal(data, want) {
		t.Error("the pulled artifact differs from the pushed archive")
	}

	// An exact older version, and a name carrying a tag.
	update(t, obj, func(o *sourcev1.HelmChart) { o.Spec.Version = "6.13.0" })
	got = waitChart(t, obj, "Ready at 6.13.0", readyWith(sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.13.0'"))
	checkChartArtifact(t, got, "6.13.0")
	bad := newHelmChart(t, ns, "tagged", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "podinfo:6.14.1"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "oci"}
	})
	got = waitChart(t, bad, "InvalidChartReference", failedWith(sourcev1.FetchFailedCondition, sourcev1.InvalidChartReferenceReason,
		"chart name 'podinfo:6.14.1' must not carry a tag or digest"))
	if !stalled(got) {
		t.Errorf("a chart name with a tag is not stalled: %+v", got.Status.Conditions)
	}
}

func secret(ns, name string, data map[string]string) client.Object {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

// TestBinaryHelmChart runs the built source-controller on HelmCharts of a
// GitRepository holding podinfo's chart and of an OCI HelmRepository: both
// Ready with Flux's messages, artifacts served by the binary's file server
// with their digests.
func TestBinaryHelmChart(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=binary-helm", "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
	label := map[string]string{shardKey: "binary-helm"}

	ns := newNamespace(t)
	r := newRepo(t, podinfoFiles(t, "charts/podinfo/"))
	newGitRepository(t, ns, "podinfo", r.URL(), func(o *sourcev1.GitRepository) { o.Labels = label })
	reg := helmtest.NewOCIRegistry(t)
	reg.Push(t, helmtest.PackageChart(t, helmtest.PodinfoChartDir(t)))
	hr := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oci", Labels: label},
		Spec: sourcev1.HelmRepositorySpec{URL: reg.URL(), Type: sourcev1.HelmRepositoryTypeOCI, Insecure: true,
			Interval: metav1.Duration{Duration: time.Hour}}}
	if err := env.Client.Create(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, chart, kind, source, reason, msg string
	}{
		{"from-git", "charts/podinfo", sourcev1.GitRepositoryKind, "podinfo", sourcev1.ChartPackageSucceededReason, "packaged 'podinfo' chart with version '6.14.1'"},
		{"from-oci", "podinfo", sourcev1.HelmRepositoryKind, "oci", sourcev1.ChartPullSucceededReason, "pulled 'podinfo' chart with version '6.14.1'"},
	} {
		obj := newHelmChart(t, ns, tc.name, func(o *sourcev1.HelmChart) {
			o.Labels = label
			o.Spec.Chart = tc.chart
			o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: tc.kind, Name: tc.source}
		})
		got := waitChart(t, obj, "Ready", readyWith(tc.reason, tc.msg))
		if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
			t.Errorf("%s: artifact URL %s is not the binary's file server", tc.name, got.Status.Artifact.URL)
		}
		checkChartArtifact(t, got, "6.14.1")
	}
}

// TestHelmChartFlags: Flux's chart size flags and defaults.
func TestHelmChartFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if c.HelmChartMaxSize != 10<<20 || c.HelmChartFileMaxSize != 5<<20 {
		t.Errorf("defaults %d, %d; want 10 MiB and 5 MiB", c.HelmChartMaxSize, c.HelmChartFileMaxSize)
	}
	if err := fs.Parse([]string{"--helm-chart-max-size=2048", "--helm-chart-file-max-size=1024"}); err != nil {
		t.Fatal(err)
	}
	if c.HelmChartMaxSize != 2048 || c.HelmChartFileMaxSize != 1024 {
		t.Errorf("parsed %d, %d", c.HelmChartMaxSize, c.HelmChartFileMaxSize)
	}
}
