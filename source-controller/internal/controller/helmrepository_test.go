package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helmShard labels the HelmRepositories of the binary under test.
const helmShard = "helm-binary"

// indexYAML is a chart repository index with two valid versions of
// podinfo (out of order) and an entry Helm drops (its version is not
// semver).
const indexYAML = `apiVersion: v1
entries:
  podinfo:
  - apiVersion: v2
    name: podinfo
    version: 6.5.0
    created: "2024-01-01T00:00:00Z"
    digest: 0000000000000000000000000000000000000000000000000000000000000001
    urls:
    - podinfo-6.5.0.tgz
  - apiVersion: v2
    name: podinfo
    version: 6.6.0
    created: "2024-02-01T00:00:00Z"
    digest: 0000000000000000000000000000000000000000000000000000000000000002
    urls:
    - podinfo-6.6.0.tgz
  - apiVersion: v2
    name: podinfo
    version: not-a-version
    urls:
    - podinfo-broken.tgz
generated: "2024-02-01T00:00:00Z"
`

// newChartServer is a helmtest.ChartServer answering /index.yaml with
// index (nil: the index it builds from its charts).
func newChartServer(t testing.TB, index []byte, opts ...helmtest.ServerOption) *helmtest.ChartServer {
	srv := helmtest.NewChartServer(t, opts...)
	if index != nil {
		srv.SetIndex(index)
	}
	return srv
}

func revisionOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// helmBinary is the built source-controller the HelmRepository tests share.
type helmBinary struct {
	dataDir string
	port    int
	events  *eventSink
}

// storageDir is the storage directory of ns/name in the binary's storage.
func (b *helmBinary) storageDir(ns, name string) string {
	return filepath.Join(b.dataDir, "helmrepository", ns, name)
}

// TestBinaryHelmRepository runs the built source-controller on
// HelmRepositories (one binary for all subtests, its index size cap set to
// 64 KiB) against a chart repository served over HTTP.
func TestBinaryHelmRepository(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	b := &helmBinary{dataDir: filepath.Join(t.TempDir(), "data"), port: port, events: &eventSink{}}
	sinkSrv := httptest.NewServer(b.events)
	t.Cleanup(sinkSrv.Close)
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+helmShard, "--storage-path="+b.dataDir,
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s",
		"--helm-index-max-size=65536", "--events-addr="+sinkSrv.URL)

	t.Run("lifecycle", func(t *testing.T) { t.Parallel(); testHelmRepositoryLifecycle(t, b) })
	t.Run("fetch failures", func(t *testing.T) { t.Parallel(); testHelmRepositoryFetchFailures(t, b) })
	t.Run("oci is static", func(t *testing.T) { t.Parallel(); testHelmRepositoryOCIStatic(t, b) })
	t.Run("suspend", func(t *testing.T) { t.Parallel(); testHelmRepositorySuspend(t, b) })
	t.Run("tls", func(t *testing.T) { t.Parallel(); testHelmRepositoryTLS(t) })
}

func newHelmRepository(t testing.TB, ns, name, url string, mutate func(*sourcev1.HelmRepository)) *sourcev1.HelmRepository {
	t.Helper()
	obj := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{shardKey: helmShard}},
		Spec:       sourcev1.HelmRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Hour}},
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func newBasicAuthSecret(t testing.TB, ns, name, user, password string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"username": user, "password": password}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func waitHelm(t testing.TB, obj *sourcev1.HelmRepository, what string, cond func(*sourcev1.HelmRepository) bool) *sourcev1.HelmRepository {
	t.Helper()
	got := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	testenv.WaitFor(t, env.Client, got, what, func() bool { return cond(got) })
	return got
}

func helmSettled(o *sourcev1.HelmRepository) bool {
	c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.ObservedGeneration == o.Generation && c.Status != metav1.ConditionUnknown
}

func waitHelmReady(t testing.TB, obj *sourcev1.HelmRepository) *sourcev1.HelmRepository {
	t.Helper()
	return waitHelm(t, obj, "Ready", func(o *sourcev1.HelmRepository) bool {
		return helmSettled(o) && apimeta.IsStatusConditionTrue(o.Status.Conditions, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation
	})
}

// waitHelmFailed waits until Ready=False with reason and returns the object.
func waitHelmFailed(t testing.TB, obj *sourcev1.HelmRepository, reason string) *sourcev1.HelmRepository {
	t.Helper()
	return waitHelm(t, obj, "Ready=False "+reason, func(o *sourcev1.HelmRepository) bool {
		c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		return helmSettled(o) && c.Status == metav1.ConditionFalse && c.Reason == reason
	})
}

func requestHelmReconcile(t testing.TB, obj *sourcev1.HelmRepository) *sourcev1.HelmRepository {
	t.Helper()
	got := obj.DeepCopy()
	testenv.RequestReconcile(t, env.Client, got, func() string { return got.Status.LastHandledReconcileAt })
	return got
}

// waitEvents waits until the binary has sent at least n events of reason
// about obj and returns them.
func (b *helmBinary) waitEvents(t testing.TB, obj client.Object, reason string, n int) []string {
	t.Helper()
	var msgs []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, testenv.WaitTimeout, true,
		func(context.Context) (bool, error) {
			msgs = msgs[:0]
			for _, e := range b.events.find(obj.GetNamespace(), obj.GetName(), reason) {
				msgs = append(msgs, e.Message)
			}
			return len(msgs) >= n, nil
		})
	if err != nil {
		t.Fatalf("%s events of %s: %q, want %d", reason, obj.GetName(), msgs, n)
	}
	return msgs
}

func condition(o *sourcev1.HelmRepository, typ string) *metav1.Condition {
	return apimeta.FindStatusCondition(o.Status.Conditions, typ)
}

func get(t testing.TB, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// checkStoredIndex checks the artifact of got against the served index
// bytes: revision, path, Ready and ArtifactInStorage messages, digest and
// size of the bytes served by the artifact server, content (the parsed
// index as indented JSON whose chart has wantVersions: invalid entries
// dropped, newest first) and status.url serving the same bytes. It returns
// the stored bytes.
func checkStoredIndex(t testing.TB, got *sourcev1.HelmRepository, served []byte, chart string, wantVersions ...string) []byte {
	t.Helper()
	rev := revisionOf(served)
	hexRev := strings.TrimPrefix(rev, "sha256:")
	art := got.Status.Artifact
	if art == nil {
		t.Fatalf("no artifact; status %+v", got.Status)
	}
	if art.Revision != rev {
		t.Errorf("revision %s, want %s (sha256 of the served bytes)", art.Revision, rev)
	}
	if want := fmt.Sprintf("helmrepository/%s/%s/index-%s.yaml", got.Namespace, got.Name, hexRev); art.Path != want {
		t.Errorf("artifact path %s, want %s", art.Path, want)
	}
	want := fmt.Sprintf("stored artifact: revision '%s'", rev)
	for _, typ := range []string{meta.ReadyCondition, sourcev1.ArtifactInStorageCondition} {
		if c := condition(got, typ); c == nil || c.Status != metav1.ConditionTrue || c.Reason != meta.SucceededReason || c.Message != want {
			t.Errorf("%s = %+v, want True Succeeded %q", typ, c, want)
		}
	}
	stored := download(t, art)
	var idx helmrepo.IndexFile
	if err := json.Unmarshal(stored, &idx); err != nil {
		t.Fatalf("the stored index is not JSON: %v", err)
	}
	indented, _ := json.MarshalIndent(&idx, "", "  ")
	if !bytes.Equal(stored, indented) {
		t.Errorf("the stored index is not indented JSON:\n%s", stored)
	}
	var versions []string
	for _, v := range idx.Entries[chart] {
		versions = append(versions, v.Version)
	}
	if idx.APIVersion != "v1" || strings.Join(versions, " ") != strings.Join(wantVersions, " ") {
		t.Errorf("stored index: apiVersion %q, %s versions %v; want v1 and %v", idx.APIVersion, chart, versions, wantVersions)
	}
	if !strings.HasSuffix(got.Status.URL, fmt.Sprintf("/helmrepository/%s/%s/index.yaml", got.Namespace, got.Name)) {
		t.Errorf("status.url %s does not end in /helmrepository/<ns>/<name>/index.yaml", got.Status.URL)
	}
	if b := get(t, got.Status.URL); !bytes.Equal(b, stored) {
		t.Errorf("status.url serves other bytes than the artifact")
	}
	return stored
}

// storedFiles lists the object's storage directory, sorted.
func storedFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// testHelmRepositoryLifecycle: a repository with basic auth is stored;
// the same index is fetched again and not re-stored; a new index is a new
// revision (ArtifactOutdated NewRevision, then NewArtifact); a failing
// server leaves the last artifact served; deletion removes the storage.
func testHelmRepositoryLifecycle(t *testing.T, b *helmBinary) {
	ns := newNamespace(t)
	srv := newChartServer(t, []byte(indexYAML), helmtest.WithBasicAuth("helm", "s3cr3t-pw"))
	newBasicAuthSecret(t, ns, "creds", "helm", "s3cr3t-pw")
	obj := newHelmRepository(t, ns, "podinfo", srv.URL()+"/", func(o *sourcev1.HelmRepository) {
		o.Spec.SecretRef = &meta.LocalObjectReference{Name: "creds"}
	})
	got := waitHelmReady(t, obj)
	stored := checkStoredIndex(t, got, []byte(indexYAML), "podinfo", "6.6.0", "6.5.0")
	if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/", b.port)) {
		t.Errorf("artifact URL %s is not the binary's file server", got.Status.Artifact.URL)
	}
	wantEvent := fmt.Sprintf("stored fetched index of size %s from '%s'", humanSize(int64(len(stored))), srv.URL()+"/")
	if msgs := b.waitEvents(t, obj, "NewArtifact", 1); msgs[0] != wantEvent {
		t.Errorf("NewArtifact event %q, want %q", msgs[0], wantEvent)
	}

	// The same index again: fetched, not stored again.
	first := got.Status.Artifact
	before := srv.Requests().Index
	got = requestHelmReconcile(t, obj)
	if srv.Requests().Index == before {
		t.Error("the index was not fetched again on a reconcile request")
	}
	if a := got.Status.Artifact; a.Path != first.Path || a.Digest != first.Digest || !a.LastUpdateTime.Equal(&first.LastUpdateTime) {
		t.Errorf("the identical index was stored again: %+v, was %+v", a, first)
	}

	// A new index: a new revision, announced as outdated, then stored.
	w, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := w.Watch(context.Background(), &sourcev1.HelmRepositoryList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	// The server now serves the index it builds from two packaged charts.
	srv.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "demo", "1.0.0")))
	srv.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "demo", "1.1.0")))
	srv.SetIndex(nil)
	next := srv.Index()
	requestHelmReconcile(t, obj)
	got = waitHelmReady(t, obj)
	checkStoredIndex(t, got, next, "demo", "1.1.0", "1.0.0")
	wantOutdated := fmt.Sprintf("new index revision '%s'", revisionOf(next))
	sawOutdated := false
	for !sawOutdated {
		select {
		case ev := <-watch.ResultChan():
			if o, ok := ev.Object.(*sourcev1.HelmRepository); ok {
				c := condition(o, sourcev1.ArtifactOutdatedCondition)
				sawOutdated = c != nil && c.Reason == sourcev1.NewRevisionReason && c.Message == wantOutdated
			}
		case <-time.After(testenv.WaitTimeout):
			t.Fatalf("no status with ArtifactOutdated NewRevision %q was written", wantOutdated)
		}
	}
	if msgs := b.waitEvents(t, obj, "NewArtifact", 2); len(msgs) != 2 {
		t.Errorf("NewArtifact events %q, want 2", msgs)
	}

	// The server fails: Ready=False, the last artifact still served, no
	// temporary file left.
	srv.FailWith(http.StatusInternalServerError)
	requestHelmReconcile(t, obj)
	got = waitHelmFailed(t, obj, meta.FailedReason)
	wantMsg := fmt.Sprintf("failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch %s/index.yaml : 500 Internal Server Error", srv.URL())
	if c := condition(got, sourcev1.FetchFailedCondition); c == nil || c.Status != metav1.ConditionTrue || c.Message != wantMsg {
		t.Errorf("FetchFailed = %+v, want True %q", c, wantMsg)
	}
	if got.Status.Artifact == nil || got.Status.Artifact.Revision != revisionOf(next) {
		t.Fatalf("the failing fetch dropped the artifact: %+v", got.Status.Artifact)
	}
	download(t, got.Status.Artifact)
	get(t, got.Status.URL)
	for _, name := range storedFiles(t, b.storageDir(ns, obj.Name)) {
		if name != "index.yaml" && !(strings.HasPrefix(name, "index-") && strings.HasSuffix(name, ".yaml")) {
			t.Errorf("unexpected file %s in the storage directory", name)
		}
	}

	// Recovered: Ready again with a Succeeded event, same artifact.
	srv.FailWith(0)
	requestHelmReconcile(t, obj)
	got = waitHelmReady(t, obj)
	if msgs := b.waitEvents(t, obj, meta.SucceededReason, 1); !strings.HasPrefix(msgs[0], "stored fetched index of size ") {
		t.Errorf("recovery event %q", msgs[0])
	}

	// Deletion removes the storage directory, then the finalizer.
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, got, "deleted HelmRepository")
	if _, err := os.Stat(b.storageDir(ns, obj.Name)); !os.IsNotExist(err) {
		t.Errorf("storage directory still there after deletion: %v", err)
	}
}

// testHelmRepositoryFetchFailures: each failure sets FetchFailed with
// Flux's reason and a stable message without credentials.
func testHelmRepositoryFetchFailures(t *testing.T, b *helmBinary) {
	ns := newNamespace(t)
	auth := newChartServer(t, []byte(indexYAML), helmtest.WithBasicAuth("helm", "s3cr3t-pw")).URL()
	plain := newChartServer(t, []byte(indexYAML)).URL()
	failing := newChartServer(t, nil)
	failing.FailWith(http.StatusInternalServerError)
	html := newChartServer(t, []byte("<html><body>not an index</body></html>\n")).URL()
	noAPIVersion := newChartServer(t, []byte("entries: {}\n")).URL()
	big := newChartServer(t, []byte("apiVersion: v1\n# "+strings.Repeat("x", 70000)+"\n")).URL()
	newBasicAuthSecret(t, ns, "wrong", "helm", "wr0ng-pw")

	userinfo := strings.Replace(auth, "http://", "http://helm:url-pw@", 1)
	cases := []struct {
		name, url, secret, reason, message string
		stalled                            bool
	}{
		{"no-credentials", auth, "", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch " + auth + "/index.yaml : 401 Unauthorized", false},
		{"wrong-credentials", auth, "wrong", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch " + auth + "/index.yaml : 401 Unauthorized", false},
		{"credentials-in-url", userinfo, "", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch " +
				strings.Replace(auth, "http://", "http://xxxxx@", 1) + "/index.yaml : 401 Unauthorized", false},
		{"missing-secret", auth, "missing", sourcev1.AuthenticationFailedReason,
			fmt.Sprintf("failed to get authentication secret '%s/missing': secrets \"missing\" not found", ns), false},
		{"not-found", plain + "/charts", "", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch " + plain + "/charts/index.yaml : 404 Not Found", false},
		{"server-error", failing.URL(), "", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: failed to fetch " + failing.URL() + "/index.yaml : 500 Internal Server Error", false},
		{"not-yaml", html, "", sourcev1.IndexationFailedReason,
			"failed to load Helm repository from index YAML at " + html + ": failed to load index: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type repo.IndexFile", false},
		{"no-api-version", noAPIVersion, "", sourcev1.IndexationFailedReason,
			"failed to load Helm repository from index YAML at " + noAPIVersion + ": failed to load index: no API version specified", false},
		{"no-api-version-credentials-in-url", strings.Replace(noAPIVersion, "http://", "http://helm:url-pw@", 1) + "/", "", sourcev1.IndexationFailedReason,
			"failed to load Helm repository from index YAML at " + strings.Replace(noAPIVersion, "http://", "http://xxxxx@", 1) + "/: failed to load index: no API version specified", false},
		{"too-big", big, "", meta.FailedReason,
			"failed to fetch Helm repository index: failed to cache index to temporary file: index exceeds the maximum index file size of 65536 bytes", false},
		{"oci-url", "oci://registry.example/charts", "", sourcev1.URLInvalidReason,
			"invalid Helm repository URL: 'oci' URL scheme cannot be used with 'default' HelmRepository type", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := newHelmRepository(t, ns, tc.name, tc.url, func(o *sourcev1.HelmRepository) {
				if tc.secret != "" {
					o.Spec.SecretRef = &meta.LocalObjectReference{Name: tc.secret}
				}
			})
			got := waitHelmFailed(t, obj, tc.reason)
			ready := condition(got, meta.ReadyCondition)
			if ready.Message != tc.message {
				t.Errorf("Ready message\n%q, want\n%q", ready.Message, tc.message)
			}
			if c := condition(got, sourcev1.FetchFailedCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("FetchFailed = %+v", c)
			}
			if stalled := apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition); stalled != tc.stalled {
				t.Errorf("Stalled %v, want %v", stalled, tc.stalled)
			}
			for _, secret := range []string{"s3cr3t-pw", "wr0ng-pw", "url-pw"} {
				if strings.Contains(ready.Message, secret) {
					t.Errorf("the message holds a password: %s", ready.Message)
				}
			}
			if got.Status.Artifact != nil || got.Status.URL != "" {
				t.Errorf("a failed first fetch has artifact %+v, url %q", got.Status.Artifact, got.Status.URL)
			}
			// The same failure again gives the same text.
			again := requestHelmReconcile(t, got)
			if c := condition(again, meta.ReadyCondition); c.Message != tc.message {
				t.Errorf("second failure's message %q differs", c.Message)
			}
			if _, err := os.Stat(b.storageDir(ns, tc.name)); !os.IsNotExist(err) {
				t.Errorf("a failed fetch left a storage directory: %v", err)
			}
			if err := env.Client.Delete(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			testenv.WaitGone(t, env.Client, got, "deleted HelmRepository")
		})
	}
}

// testHelmRepositoryOCIStatic: a HelmRepository turned to type oci loses
// its artifacts, finalizer and status, and stays so.
func testHelmRepositoryOCIStatic(t *testing.T, b *helmBinary) {
	ns := newNamespace(t)
	obj := newHelmRepository(t, ns, "to-oci", newChartServer(t, []byte(indexYAML)).URL(), nil)
	waitHelmReady(t, obj)
	if _, err := os.Stat(b.storageDir(ns, obj.Name)); err != nil {
		t.Fatal(err)
	}
	cur := &sourcev1.HelmRepository{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	cur.Spec.URL = "oci://registry.example/charts"
	if err := env.Client.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	got := waitHelm(t, obj, "static", func(o *sourcev1.HelmRepository) bool {
		return len(o.Finalizers) == 0 && len(o.Status.Conditions) == 0
	})
	if got.Status.Artifact != nil || got.Status.URL != "" || got.Status.LastHandledReconcileAt != "" || got.Status.ObservedGeneration > 0 {
		t.Errorf("status not emptied: %+v", got.Status)
	}
	if _, err := os.Stat(b.storageDir(ns, obj.Name)); !os.IsNotExist(err) {
		t.Errorf("the storage directory is still there: %v", err)
	}
	// An oci object carrying the finalizer (as one an older version
	// reconciled) is released too.
	fresh := newHelmRepository(t, ns, "oci", "oci://registry.example/charts", func(o *sourcev1.HelmRepository) {
		o.Spec.Type = sourcev1.HelmRepositoryTypeOCI
		o.Finalizers = []string{sourcev1.SourceFinalizer}
	})
	got = waitHelm(t, fresh, "finalizer removed", func(o *sourcev1.HelmRepository) bool { return len(o.Finalizers) == 0 })
	if len(got.Status.Conditions) != 0 || got.Status.Artifact != nil {
		t.Errorf("oci HelmRepository got status %+v", got.Status)
	}
	for _, o := range []*sourcev1.HelmRepository{obj, fresh} {
		if err := env.Client.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		testenv.WaitGone(t, env.Client, o, "deleted HelmRepository")
	}
}

// testHelmRepositorySuspend: a suspended HelmRepository handles reconcile
// requests without fetching.
func testHelmRepositorySuspend(t *testing.T, b *helmBinary) {
	ns := newNamespace(t)
	srv := newChartServer(t, []byte(indexYAML))
	obj := newHelmRepository(t, ns, "suspended", srv.URL(), nil)
	waitHelmReady(t, obj)
	cur := &sourcev1.HelmRepository{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Suspend = true
	if err := env.Client.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	waitHelm(t, obj, "suspended generation observed", func(o *sourcev1.HelmRepository) bool {
		return o.Status.ObservedGeneration == o.Generation
	})
	before := srv.Requests().Index
	got := requestHelmReconcile(t, obj)
	if srv.Requests().Index != before {
		t.Error("a suspended HelmRepository fetched its index")
	}
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition) || got.Status.Artifact == nil {
		t.Errorf("suspended: status %+v", got.Status)
	}
}

// testHelmRepositoryTLS: an HTTPS repository whose CA is not trusted fails;
// with the CA in spec.certSecretRef's ca.crt it is stored.
func testHelmRepositoryTLS(t *testing.T) {
	ns := newNamespace(t)
	srv := newChartServer(t, []byte(indexYAML), helmtest.WithTLS())
	obj := newHelmRepository(t, ns, "https", srv.URL(), nil)
	got := waitHelmFailed(t, obj, meta.FailedReason)
	if msg := condition(got, meta.ReadyCondition).Message; !strings.Contains(msg, "certificate signed by unknown authority") {
		t.Errorf("untrusted CA: message %q", msg)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Data: map[string][]byte{"ca.crt": srv.CAPEM()}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	cur := &sourcev1.HelmRepository{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	// A merge patch: the controller writes the object (status, finalizer)
	// meanwhile, and an Update of what was read would conflict.
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "ca"}
	if err := env.Client.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
	got = waitHelmReady(t, obj)
	checkStoredIndex(t, got, []byte(indexYAML), "podinfo", "6.6.0", "6.5.0")
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 512: "512B", 1000: "1kB", 1234: "1.234kB", 1500000: "1.5MB", 52428800: "52.43MB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestIndexURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://charts.example":           "https://charts.example/index.yaml",
		"https://charts.example/":          "https://charts.example/index.yaml",
		"https://charts.example/a/b/":      "https://charts.example/a/b/index.yaml",
		"https://charts.example/a%2Fb?x=1": "https://charts.example/a%2Fb/index.yaml?x=1",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := indexURL(u); got != want {
			t.Errorf("indexURL(%s) = %s, want %s", in, got, want)
		}
	}
}
