package controller

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ociTestMaxBytes is the in-process reconciler's OCI layer limit (Config.OCILimits).
const ociTestMaxBytes = 1 << 20

// Media types and annotations of Flux's OCI artifacts (fluxcd/pkg/oci).
const (
	fluxConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	fluxContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// contentLayer is Flux's content layer holding files (name → body).
func contentLayer(t testing.TB, files map[string]string) gcrv1.Layer {
	return static.NewLayer(artifacttest.Files(t, files), fluxContentMediaType)
}

// fluxAnnotations are the manifest annotations `flux push artifact` writes.
func fluxAnnotations(revision string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   "https://github.com/eddyops/example",
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  "2026-01-01T00:00:00Z",
	}
}

// pushOCI pushes an artifact in Flux's format (OCI manifest, Flux's config
// media type, annotations, then layers) to <registry>/<repo>:<tag> and
// returns its manifest digest.
func pushOCI(t testing.TB, reg *testenv.Registry, repo, tag string, annotations map[string]string, layers []gcrv1.Layer, opts ...remote.Option) string {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, fluxConfigMediaType)
	img = mutate.Annotations(img, annotations).(gcrv1.Image)
	for _, l := range layers {
		var err error
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l}); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := name.ParseReference(reg.Host() + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// pushFiles pushes a Flux artifact of files with the origin revision rev.
func pushFiles(t testing.TB, reg *testenv.Registry, repo, tag, rev string, files map[string]string, opts ...remote.Option) string {
	t.Helper()
	return pushOCI(t, reg, repo, tag, fluxAnnotations(rev), []gcrv1.Layer{contentLayer(t, files)}, opts...)
}

func newOCIRepository(t testing.TB, ns, name, url string, mutate func(*sourcev1.OCIRepository)) *sourcev1.OCIRepository {
	t.Helper()
	obj := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       sourcev1.OCIRepositorySpec{URL: url, Interval: &metav1.Duration{Duration: time.Hour}},
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func waitOCI(t testing.TB, obj *sourcev1.OCIRepository, what string, cond func(*sourcev1.OCIRepository) bool) *sourcev1.OCIRepository {
	t.Helper()
	got := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	testenv.WaitFor(t, env.Client, got, what, func() bool { return cond(got) })
	return got
}

func ociSettled(o *sourcev1.OCIRepository) bool {
	c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.ObservedGeneration == o.Generation && c.Status != metav1.ConditionUnknown
}

func waitOCIReady(t testing.TB, obj *sourcev1.OCIRepository) *sourcev1.OCIRepository {
	t.Helper()
	return waitOCI(t, obj, "Ready", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && apimeta.IsStatusConditionTrue(o.Status.Conditions, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation
	})
}

// waitOCIFailed waits until Ready=False with reason and returns the object.
func waitOCIFailed(t testing.TB, obj *sourcev1.OCIRepository, reason string) *sourcev1.OCIRepository {
	t.Helper()
	return waitOCI(t, obj, "Ready=False "+reason, func(o *sourcev1.OCIRepository) bool {
		c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		return ociSettled(o) && c.Status == metav1.ConditionFalse && c.Reason == reason
	})
}

func requestOCIReconcile(t testing.TB, obj *sourcev1.OCIRepository) *sourcev1.OCIRepository {
	t.Helper()
	got := obj.DeepCopy()
	testenv.RequestReconcile(t, env.Client, got, func() string { return got.Status.LastHandledReconcileAt })
	return got
}

// readyMessage is the Ready condition's message.
func readyMessage(o *sourcev1.OCIRepository) string {
	if c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition); c != nil {
		return c.Message
	}
	return ""
}

// checkFailureMessage checks that a failure message names want and carries
// no temporary path or credential.
func checkFailureMessage(t testing.TB, o *sourcev1.OCIRepository, want string, secrets ...string) {
	t.Helper()
	msg := readyMessage(o)
	if !strings.Contains(msg, want) {
		t.Errorf("Ready message %q does not name %q", msg, want)
	}
	for _, bad := range append([]string{"/tmp/", "ocirepository-"}, secrets...) {
		if strings.Contains(msg, bad) {
			t.Errorf("Ready message %q contains %q", msg, bad)
		}
	}
}

// counts is a snapshot of a registry's request counters.
type counts struct{ blobs, gets, heads, tags int }

func snapshot(reg *testenv.Registry) counts {
	return counts{reg.Requests(testenv.RegistryBlobGet), reg.Requests(testenv.RegistryManifestGet),
		reg.Requests(testenv.RegistryManifestHead), reg.Requests(testenv.RegistryTagsList)}
}

// TestOCIRepository runs the in-process reconciler on OCIRepositories of
// in-process registries (one per subtest).
func TestOCIRepository(t *testing.T) {
	t.Run("tag", func(t *testing.T) { t.Parallel(); testOCITag(t) })
	t.Run("semver", func(t *testing.T) { t.Parallel(); testOCISemver(t) })
	t.Run("digest", func(t *testing.T) { t.Parallel(); testOCIDigest(t) })
	t.Run("layer selector", func(t *testing.T) { t.Parallel(); testOCILayerSelector(t) })
	t.Run("bad artifacts", func(t *testing.T) { t.Parallel(); testOCIBadArtifacts(t) })
	t.Run("registry errors", func(t *testing.T) { t.Parallel(); testOCIRegistryErrors(t) })
	t.Run("auth", func(t *testing.T) { t.Parallel(); testOCIAuth(t) })
	t.Run("refused fields", func(t *testing.T) { t.Parallel(); testOCIRefused(t) })
	t.Run("tls", func(t *testing.T) { t.Parallel(); testOCITLS(t) })
	t.Run("proxy", func(t *testing.T) { t.Parallel(); testOCIProxy(t) })
	t.Run("suspend and delete", func(t *testing.T) { t.Parallel(); testOCISuspendDelete(t) })
	t.Run("layer digest lies", func(t *testing.T) { t.Parallel(); testOCILyingLayer(t) })
	t.Run("registry stalls", func(t *testing.T) { t.Parallel(); testOCIStalledRegistry(t) })
	t.Run("huge registry error", func(t *testing.T) { t.Parallel(); testOCIHugeRegistryError(t) })
}

// testOCITag: the default tag latest; the artifact, its metadata, link and
// event; an unchanged digest costs one HEAD and no blob; a new push is
// picked up; spec.ignore re-stores the same revision without the ignored files.
func testOCITag(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	d1 := pushFiles(t, reg, "app", "latest", "main@sha1:1111", map[string]string{
		"deploy/app.yaml": "kind: ConfigMap\n", "docs/readme.md": "docs\n", "logo.png": "png\n",
	})
	url := "oci://" + reg.Host() + "/app"
	obj := newOCIRepository(t, ns, "app", url, nil)
	got := waitOCIReady(t, obj)
	a := got.Status.Artifact
	if want := "latest@" + d1; a.Revision != want {
		t.Fatalf("revision %s, want %s", a.Revision, want)
	}
	if want := path.Join("ocirepository", ns, "app", d1+".tar.gz"); a.Path != want {
		t.Errorf("artifact path %s, want %s", a.Path, want)
	}
	if a.Metadata["org.opencontainers.image.revision"] != "main@sha1:1111" || a.Metadata["org.opencontainers.image.source"] == "" {
		t.Errorf("artifact metadata %v lacks the manifest annotations", a.Metadata)
	}
	if !strings.HasSuffix(got.Status.URL, "/ocirepository/"+ns+"/app/latest.tar.gz") {
		t.Errorf("status.url %s is not the latest.tar.gz link", got.Status.URL)
	}
	if m, want := readyMessage(got), "stored artifact for digest '"+a.Revision+"'"; m != want {
		t.Errorf("Ready message %q, want %q", m, want)
	}
	// Flux compatible: the layer is stored as pulled, defaults not applied.
	if files := keys(untar(t, download(t, a))); strings.Join(files, ",") != "deploy/app.yaml,docs/readme.md,logo.png" {
		t.Errorf("artifact files %v", files)
	}
	evs := sink.find(ns, "app", "NewArtifact")
	if len(evs) != 1 {
		t.Fatalf("%d NewArtifact events, want 1", len(evs))
	}
	wantMsg := fmt.Sprintf("stored artifact with revision '%s' from '%s', origin source 'https://github.com/eddyops/example', origin revision 'main@sha1:1111'", a.Revision, url)
	if evs[0].Message != wantMsg {
		t.Errorf("NewArtifact message %q, want %q", evs[0].Message, wantMsg)
	}
	if md := evs[0].Metadata; md["source.toolkit.fluxcd.io/revision"] != a.Revision || md["source.toolkit.fluxcd.io/digest"] != a.Digest ||
		md["source.toolkit.fluxcd.io/originRevision"] != "main@sha1:1111" {
		t.Errorf("NewArtifact metadata %v", md)
	}

	// Unchanged: one HEAD, no manifest GET, no blob.
	before := snapshot(reg)
	got = requestOCIReconcile(t, obj)
	after := snapshot(reg)
	if after.blobs != before.blobs || after.gets != before.gets || after.heads <= before.heads {
		t.Errorf("an unchanged digest made requests %+v → %+v; want only HEADs", before, after)
	}
	if got.Status.Artifact.Revision != a.Revision || got.Status.Artifact.Digest != a.Digest {
		t.Errorf("artifact changed to %s without a new push", got.Status.Artifact.Revision)
	}

	// A new push at the same tag.
	d2 := pushFiles(t, reg, "app", "latest", "main@sha1:2222", map[string]string{"deploy/app.yaml": "kind: Secret\n"})
	requestOCIReconcile(t, obj)
	got = waitOCI(t, obj, "the new push", func(o *sourcev1.OCIRepository) bool {
		return o.Status.Artifact != nil && o.Status.Artifact.Revision == "latest@"+d2 && ociSettled(o)
	})
	if files := untar(t, download(t, got.Status.Artifact)); string(files["deploy/app.yaml"]) != "kind: Secret\n" {
		t.Errorf("new artifact holds %v", keys(files))
	}
	if n := len(sink.find(ns, "app", "NewArtifact")); n != 2 {
		t.Errorf("%d NewArtifact events after a new push, want 2", n)
	}

	// spec.ignore: same revision, stored again without the ignored files.
	d3 := pushFiles(t, reg, "app", "latest", "main@sha1:3333", map[string]string{
		"deploy/app.yaml": "a\n", "docs/readme.md": "b\n", ".sourceignore": "*.md\n", "tests/x.yaml": "c\n",
	})
	ignore := "tests/\n"
	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Ignore = &ignore })
	got = waitOCI(t, obj, "the ignore rules applied", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && o.Status.ObservedIgnore != nil && o.Status.Artifact.Revision == "latest@"+d3
	})
	if files := keys(untar(t, download(t, got.Status.Artifact))); strings.Join(files, ",") != ".sourceignore,deploy/app.yaml" {
		t.Errorf("artifact with ignore rules holds %v, want .sourceignore and deploy/app.yaml", files)
	}
}

// testOCISemver: the highest tag in the range, semverFilter applied first,
// a new matching tag picked up, a range matching nothing.
func testOCISemver(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	digests := map[string]string{}
	for _, tag := range []string{"1.0.0", "1.2.0", "1.3.0-rc.1", "2.0.0", "latest", "v1.1.0-dev"} {
		digests[tag] = pushFiles(t, reg, "app", tag, "rev-"+tag, map[string]string{"v": tag})
	}
	url := "oci://" + reg.Host() + "/app"
	obj := newOCIRepository(t, ns, "range", url, func(o *sourcev1.OCIRepository) {
		o.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0 <2.0.0", Tag: "latest"}
	})
	filtered := newOCIRepository(t, ns, "filtered", url, func(o *sourcev1.OCIRepository) {
		o.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: ">=1.0.0-0", SemverFilter: ".*-dev$"}
	})
	if got := waitOCIReady(t, obj); got.Status.Artifact.Revision != "1.2.0@"+digests["1.2.0"] {
		t.Errorf("semver range picked %s, want 1.2.0", got.Status.Artifact.Revision)
	}
	if got := waitOCIReady(t, filtered); got.Status.Artifact.Revision != "v1.1.0-dev@"+digests["v1.1.0-dev"] {
		t.Errorf("semverFilter picked %s, want v1.1.0-dev", got.Status.Artifact.Revision)
	}
	d := pushFiles(t, reg, "app", "1.4.0", "rev-1.4.0", map[string]string{"v": "1.4.0"})
	requestOCIReconcile(t, obj)
	waitOCI(t, obj, "1.4.0", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && o.Status.Artifact != nil && o.Status.Artifact.Revision == "1.4.0@"+d
	})

	none := newOCIRepository(t, ns, "none", url, func(o *sourcev1.OCIRepository) {
		o.Spec.Reference = &sourcev1.OCIRepositoryRef{SemVer: ">=9.0.0"}
	})
	got := waitOCIFailed(t, none, sourcev1.ReadOperationFailedReason)
	checkFailureMessage(t, got, "no match found for semver: >=9.0.0")
	checkFailureMessage(t, got, url)
}

// testOCIDigest: a digest reference is stored as sha256:<hex> and, once
// stored, costs no request at all.
func testOCIDigest(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	d := pushFiles(t, reg, "app", "v1", "rev", map[string]string{"a.yaml": "a\n"})
	pushFiles(t, reg, "app", "latest", "rev2", map[string]string{"b.yaml": "b\n"})
	obj := newOCIRepository(t, ns, "pinned", "oci://"+reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Reference = &sourcev1.OCIRepositoryRef{Digest: d, Tag: "latest"}
	})
	got := waitOCIReady(t, obj)
	if got.Status.Artifact.Revision != d {
		t.Fatalf("revision %s, want %s", got.Status.Artifact.Revision, d)
	}
	if files := keys(untar(t, download(t, got.Status.Artifact))); strings.Join(files, ",") != "a.yaml" {
		t.Errorf("digest artifact holds %v", files)
	}
	before := snapshot(reg)
	requestOCIReconcile(t, obj)
	if after := snapshot(reg); after != before {
		t.Errorf("an unchanged digest reference made requests %+v → %+v", before, after)
	}
}

// testOCILayerSelector: mediaType picks the layer; copy stores its bytes
// as they are; switching to extract stores the files again.
func testOCILayerSelector(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	// Flux compatible: a link inside the tree is skipped, not refused.
	content := artifacttest.TarGz(t, artifacttest.Entry{Name: "chart/Chart.yaml", Content: "name: x\n"},
		artifacttest.Entry{Name: "chart/link.yaml", Link: "Chart.yaml", Type: tar.TypeSymlink})
	const other types.MediaType = "application/vnd.example.notes.v1+text"
	d := pushOCI(t, reg, "multi", "latest", fluxAnnotations("r"), []gcrv1.Layer{
		static.NewLayer([]byte("notes\n"), other), static.NewLayer(content, fluxContentMediaType),
	})
	obj := newOCIRepository(t, ns, "copy", "oci://"+reg.Host()+"/multi", func(o *sourcev1.OCIRepository) {
		o.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: string(fluxContentMediaType), Operation: sourcev1.OCILayerCopy}
	})
	got := waitOCIReady(t, obj)
	if b := download(t, got.Status.Artifact); !bytes.Equal(b, content) {
		t.Errorf("copy stored %d bytes, not the layer's %d", len(b), len(content))
	}
	if got.Status.ObservedLayerSelector == nil || got.Status.ObservedLayerSelector.Operation != sourcev1.OCILayerCopy {
		t.Errorf("observedLayerSelector %+v", got.Status.ObservedLayerSelector)
	}
	if got.Status.Artifact.Revision != "latest@"+d {
		t.Errorf("revision %s", got.Status.Artifact.Revision)
	}
	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.LayerSelector.Operation = sourcev1.OCILayerExtract })
	got = waitOCI(t, obj, "extract", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && o.Status.ObservedLayerSelector != nil && o.Status.ObservedLayerSelector.Operation == sourcev1.OCILayerExtract
	})
	if files := untar(t, download(t, got.Status.Artifact)); len(files) != 1 || string(files["chart/Chart.yaml"]) != "name: x\n" {
		t.Errorf("extract stored %v, want chart/Chart.yaml alone", keys(files))
	}
}

// testOCIBadArtifacts: each bad artifact turns a Ready object Ready=False
// with a stable message, and the last good artifact stays served.
func testOCIBadArtifacts(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	big := make([]byte, ociTestMaxBytes+1024)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, reason, want string
		mutate             func(*sourcev1.OCIRepository)
		layers             []gcrv1.Layer
		noBlob             bool
	}{
		{name: "missing-tag", reason: sourcev1.OCIPullFailedReason, want: "missing-tag/manifests/nope",
			mutate: func(o *sourcev1.OCIRepository) { o.Spec.Reference = &sourcev1.OCIRepositoryRef{Tag: "nope"} }},
		{name: "no-layer", reason: sourcev1.OCILayerOperationFailedReason,
			want: "failed to find layer with media type 'application/vnd.example.none' in artifact",
			mutate: func(o *sourcev1.OCIRepository) {
				o.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: "application/vnd.example.none"}
			}},
		{name: "too-large", reason: sourcev1.OCILayerOperationFailedReason, want: "bytes, over the limit of 1048576 bytes",
			layers: []gcrv1.Layer{static.NewLayer(big, fluxContentMediaType)}, noBlob: true},
		{name: "dotdot", reason: sourcev1.OCILayerOperationFailedReason, want: `entry "../evil.yaml" leaves the extraction directory`,
			layers: []gcrv1.Layer{static.NewLayer(artifacttest.TarGz(t, artifacttest.Entry{Name: "ok.yaml", Content: "x"}, artifacttest.Entry{Name: "../evil.yaml", Content: "x"}), fluxContentMediaType)}},
		{name: "symlink-out", reason: sourcev1.OCILayerOperationFailedReason, want: `entry "etc" links outside the extraction directory`,
			layers: []gcrv1.Layer{static.NewLayer(artifacttest.TarGz(t, artifacttest.Entry{Name: "etc", Link: "../../../etc", Type: tar.TypeSymlink}), fluxContentMediaType)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reg := testenv.NewRegistry(t)
			pushFiles(t, reg, c.name, "latest", "good", map[string]string{"good.yaml": "good\n"})
			obj := newOCIRepository(t, ns, c.name, "oci://"+reg.Host()+"/"+c.name, nil)
			good := waitOCIReady(t, obj).Status.Artifact
			if c.layers != nil {
				pushOCI(t, reg, c.name, "latest", fluxAnnotations("bad"), c.layers)
			}
			blobs := reg.Requests(testenv.RegistryBlobGet)
			update(t, obj, func(o *sourcev1.OCIRepository) {
				o.Spec.Interval = &metav1.Duration{Duration: 2 * time.Hour} // a new generation
				if c.mutate != nil {
					c.mutate(o)
				}
			})
			got := waitOCIFailed(t, obj, c.reason)
			checkFailureMessage(t, got, c.want)
			if f := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.FetchFailedCondition); f == nil || f.Reason != c.reason {
				t.Errorf("FetchFailed %+v, want reason %s", f, c.reason)
			}
			if a := got.Status.Artifact; a == nil || a.Digest != good.Digest {
				t.Fatalf("status.artifact %+v, want the last good one", a)
			}
			if files := untar(t, download(t, got.Status.Artifact)); string(files["good.yaml"]) != "good\n" {
				t.Errorf("the served artifact holds %v", keys(files))
			}
			if n := reg.Requests(testenv.RegistryBlobGet); c.noBlob && n != blobs {
				t.Errorf("the over-size layer was downloaded: %d blob GETs, %d before", n, blobs)
			}
		})
	}
}

// testOCIRegistryErrors: a registry answering 429 or 500 turns a Ready
// object Ready=False naming the reference; the last good artifact stays.
func testOCIRegistryErrors(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			reg := testenv.NewRegistry(t)
			ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
			pushFiles(t, reg, "app", "latest", "good", map[string]string{"good.yaml": "good\n"})
			obj := newOCIRepository(t, ns, "app", "oci://"+reg.Host()+"/app", nil)
			good := waitOCIReady(t, obj).Status.Artifact
			reg.FailWith(status)
			update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Interval = &metav1.Duration{Duration: 2 * time.Hour} })
			got := waitOCIFailed(t, obj, sourcev1.OCIPullFailedReason)
			checkFailureMessage(t, got, reg.Host()+"/v2/app/manifests/latest")
			if a := got.Status.Artifact; a == nil || a.Digest != good.Digest {
				t.Fatalf("status.artifact %+v, want the last good one", a)
			}
			download(t, got.Status.Artifact)
			// Recovery once the registry answers again.
			reg.FailWith(0)
			requestOCIReconcile(t, obj)
			got = waitOCIReady(t, obj)
			want := fmt.Sprintf("stored artifact with revision '%s' from 'oci://%s/app', origin source 'https://github.com/eddyops/example', origin revision 'good'",
				got.Status.Artifact.Revision, reg.Host())
			testenv.WaitFor(t, env.Client, got, "the recovery's Succeeded event", func() bool {
				evs := sink.find(ns, "app", meta.SucceededReason)
				return len(evs) > 0 && evs[len(evs)-1].Message == want
			})
		})
	}
}

// dockerConfigSecret creates a kubernetes.io/dockerconfigjson Secret for host.
func dockerConfigSecret(t testing.TB, ns, name, host, user, password string) {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// testOCIAuth: a registry with basic auth answers 401 without credentials;
// a dockerconfigjson secretRef, or a ServiceAccount's imagePullSecrets,
// authenticate.
func testOCIAuth(t *testing.T) {
	const user, password = "puller", "s3cr3t-pass"
	reg := testenv.NewRegistry(t, testenv.WithBasicAuth(user, password))
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "private", "latest", "r", map[string]string{"a.yaml": "a\n"},
		remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	url := "oci://" + reg.Host() + "/private"

	anon := newOCIRepository(t, ns, "anonymous", url, nil)
	got := waitOCIFailed(t, anon, sourcev1.OCIPullFailedReason)
	checkFailureMessage(t, got, "UNAUTHORIZED")
	checkFailureMessage(t, got, reg.Host()+"/v2/private/manifests/latest", password)

	dockerConfigSecret(t, ns, "creds", reg.Host(), user, password)
	withSecret := newOCIRepository(t, ns, "secret", url, func(o *sourcev1.OCIRepository) {
		o.Spec.SecretRef = &meta.LocalObjectReference{Name: "creds"}
	})
	waitOCIReady(t, withSecret)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller", Namespace: ns},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "creds"}}}
	if err := env.Client.Create(context.Background(), sa); err != nil {
		t.Fatal(err)
	}
	withSA := newOCIRepository(t, ns, "sa", url, func(o *sourcev1.OCIRepository) { o.Spec.ServiceAccountName = "puller" })
	waitOCIReady(t, withSA)

	missing := newOCIRepository(t, ns, "missing", url, func(o *sourcev1.OCIRepository) {
		o.Spec.SecretRef = &meta.LocalObjectReference{Name: "nope"}
	})
	got = waitOCIFailed(t, missing, sourcev1.AuthenticationFailedReason)
	checkFailureMessage(t, got, "failed to get credential: failed to get secret '"+ns+"/nope'")
}

// testOCIRefused: spec.verify without a key and credentials in the URL are refused
// (Stalled), never ignored. (Every provider of the enum is built.)
func testOCIRefused(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "r", map[string]string{"a.yaml": "a\n"})
	url := "oci://" + reg.Host() + "/app"
	verify := newOCIRepository(t, ns, "verify", url, func(o *sourcev1.OCIRepository) {
		o.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: "cosign"}
	})
	creds := newOCIRepository(t, ns, "creds", "oci://user:s3cr3tpass@"+reg.Host()+"/app", nil)
	for obj, reason := range map[*sourcev1.OCIRepository]string{verify: sourcev1.VerificationErrorReason,
		creds: sourcev1.URLInvalidReason} {
		got := waitOCIFailed(t, obj, reason)
		checkFailureMessage(t, got, "", "s3cr3tpass")
		if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) {
			t.Errorf("%s: not Stalled: %+v", obj.Name, got.Status.Conditions)
		}
		if got.Status.Artifact != nil {
			t.Errorf("%s: stored an artifact despite the refusal", obj.Name)
		}
	}
}

// ociShard labels the OCIRepositories of the binary under test.
const ociShard = "oci-binary"

// TestBinaryOCIRepository runs the built source-controller on
// OCIRepositories of an in-process registry: by tag, semver and digest;
// an unchanged digest downloads no blob; a new push is picked up and
// announced with Flux's NewArtifact event.
func TestBinaryOCIRepository(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	events := &eventSink{}
	sinkSrv := httptest.NewServer(events)
	t.Cleanup(sinkSrv.Close)
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+ociShard, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s",
		"--events-addr="+sinkSrv.URL)

	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	d1 := pushFiles(t, reg, "app", "1.0.0", "rev1", map[string]string{"v.yaml": "v: 1\n"})
	d2 := pushFiles(t, reg, "app", "1.1.0", "rev2", map[string]string{"v.yaml": "v: 2\n"})
	pushFiles(t, reg, "app", "2.0.0", "rev3", map[string]string{"v.yaml": "v: 3\n"})
	url := "oci://" + reg.Host() + "/app"
	labelled := func(ref *sourcev1.OCIRepositoryRef) func(*sourcev1.OCIRepository) {
		return func(o *sourcev1.OCIRepository) {
			o.Labels = map[string]string{shardKey: ociShard}
			o.Spec.Reference = ref
		}
	}
	byTag := newOCIRepository(t, ns, "tag", url, labelled(&sourcev1.OCIRepositoryRef{Tag: "1.0.0"}))
	bySemver := newOCIRepository(t, ns, "semver", url, labelled(&sourcev1.OCIRepositoryRef{SemVer: "1.x"}))
	byDigest := newOCIRepository(t, ns, "digest", url, labelled(&sourcev1.OCIRepositoryRef{Digest: d1}))

	for _, c := range []struct {
		obj       *sourcev1.OCIRepository
		rev, file string
	}{{byTag, "1.0.0@" + d1, "v: 1\n"}, {bySemver, "1.1.0@" + d2, "v: 2\n"}, {byDigest, d1, "v: 1\n"}} {
		got := waitOCIReady(t, c.obj)
		if got.Status.Artifact.Revision != c.rev {
			t.Errorf("%s: revision %s, want %s", c.obj.Name, got.Status.Artifact.Revision, c.rev)
		}
		if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
			t.Errorf("%s: artifact URL %s is not the binary's file server", c.obj.Name, got.Status.Artifact.URL)
		}
		if v := string(untar(t, download(t, got.Status.Artifact))["v.yaml"]); v != c.file {
			t.Errorf("%s: artifact v.yaml %q, want %q", c.obj.Name, v, c.file)
		}
	}

	// Unchanged digests: no blob download, no manifest GET.
	before := snapshot(reg)
	for _, obj := range []*sourcev1.OCIRepository{byTag, bySemver, byDigest} {
		requestOCIReconcile(t, obj)
	}
	if after := snapshot(reg); after.blobs != before.blobs || after.gets != before.gets {
		t.Errorf("unchanged digests made requests %+v → %+v", before, after)
	}

	// A new version in range is picked up and announced.
	d4 := pushFiles(t, reg, "app", "1.2.0", "rev4", map[string]string{"v.yaml": "v: 4\n"})
	requestOCIReconcile(t, bySemver)
	got := waitOCI(t, bySemver, "1.2.0", func(o *sourcev1.OCIRepository) bool {
		return ociSettled(o) && o.Status.Artifact != nil && o.Status.Artifact.Revision == "1.2.0@"+d4
	})
	want := fmt.Sprintf("stored artifact with revision '1.2.0@%s' from '%s', origin source 'https://github.com/eddyops/example', origin revision 'rev4'", d4, url)
	testenv.WaitFor(t, env.Client, got, "the NewArtifact event of 1.2.0", func() bool {
		for _, e := range events.find(ns, "semver", "NewArtifact") {
			if e.Message == want {
				return true
			}
		}
		return false
	})
}

// testOCITLS: a registry over HTTPS with its own CA is trusted through
// certSecretRef's ca.crt, refused without it, and reached with insecure.
func testOCITLS(t *testing.T) {
	reg := testenv.NewRegistry(t, testenv.WithTLS())
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "r", map[string]string{"a.yaml": "a\n"}, remote.WithTransport(reg.Transport()))
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: ns}, Data: map[string][]byte{"ca.crt": reg.CACert()}}
	if err := env.Client.Create(context.Background(), ca); err != nil {
		t.Fatal(err)
	}
	url := "oci://" + reg.Host() + "/app"
	trusted := newOCIRepository(t, ns, "trusted", url, func(o *sourcev1.OCIRepository) {
		o.Spec.CertSecretRef = &meta.LocalObjectReference{Name: "ca"}
	})
	insecure := newOCIRepository(t, ns, "insecure", url, func(o *sourcev1.OCIRepository) { o.Spec.Insecure = true })
	untrusted := newOCIRepository(t, ns, "untrusted", url, nil)
	waitOCIReady(t, trusted)
	waitOCIReady(t, insecure)
	got := waitOCIFailed(t, untrusted, sourcev1.OCIPullFailedReason)
	checkFailureMessage(t, got, "certificate")
}

// testOCIProxy: with proxySecretRef every request goes through the proxy,
// with its credentials, to a registry name only the proxy resolves.
func testOCIProxy(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "r", map[string]string{"a.yaml": "a\n"})
	var proxied, authorized atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		proxied.Add(1)
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("proxy-user:proxy-pass"))
		if req.Header.Get("Proxy-Authorization") == want {
			authorized.Add(1)
		}
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			out := *req.URL
			out.Host = reg.Host()
			pr.Out.URL = &out
		}}).ServeHTTP(w, req)
	}))
	t.Cleanup(proxy.Close)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: ns},
		StringData: map[string]string{"address": proxy.URL, "username": "proxy-user", "password": "proxy-pass"}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	obj := newOCIRepository(t, ns, "proxied", "oci://registry.example.internal:5000/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Insecure = true
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	})
	got := waitOCIReady(t, obj)
	download(t, got.Status.Artifact)
	if p, a := proxied.Load(), authorized.Load(); p == 0 || a != p {
		t.Errorf("%d requests through the proxy, %d with its credentials", p, a)
	}
}

// testOCISuspendDelete: a suspended OCIRepository handles reconcile
// requests without asking the registry; deletion removes its artifacts,
// then the finalizer.
func testOCISuspendDelete(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "r", map[string]string{"a.yaml": "a\n"})
	obj := newOCIRepository(t, ns, "app", "oci://"+reg.Host()+"/app", nil)
	waitOCIReady(t, obj)
	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Suspend = true })
	waitOCI(t, obj, "suspended generation observed", func(o *sourcev1.OCIRepository) bool {
		return o.Status.ObservedGeneration == o.Generation
	})
	before := snapshot(reg)
	got := requestOCIReconcile(t, obj)
	if after := snapshot(reg); after != before {
		t.Errorf("a suspended OCIRepository made requests %+v → %+v", before, after)
	}
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition) || got.Status.Artifact == nil {
		t.Errorf("suspended: status %+v", got.Status)
	}
	dir := filepath.Join(storage.BasePath, "ocirepository", ns, "app")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("storage directory: %v", err)
	}
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, got, "deleted OCIRepository")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("storage directory still there after deletion: %v", err)
	}
}

// testOCILyingLayer: a registry (or a man in the middle of spec.insecure)
// that answers the content layer's digest with other bytes is caught, even
// though the tar stream it sends ends before its gzip trailer and padding
// are read: the artifact is not stored and the last good one stays.
func testOCILyingLayer(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "good", map[string]string{"good.yaml": "good\n"})
	evil := artifacttest.Files(t, map[string]string{"evil.yaml": "evil\n"})
	var lie atomic.Bool
	var lied atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if lie.Load() && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			lied.Add(1)
			_, _ = w.Write(evil)
			return
		}
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: reg.Host()})
		}}).ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	host := strings.TrimPrefix(front.URL, "http://")
	obj := newOCIRepository(t, ns, "app", "oci://"+host+"/app", nil)
	good := waitOCIReady(t, obj).Status.Artifact

	pushFiles(t, reg, "app", "latest", "new", map[string]string{"new.yaml": "new\n"})
	lie.Store(true)
	requestOCIReconcile(t, obj)
	got := waitOCIFailed(t, obj, sourcev1.OCILayerOperationFailedReason)
	checkFailureMessage(t, got, "failed to extract layer contents from artifact")
	if lied.Load() == 0 {
		t.Fatal("the lying blob was never asked for")
	}
	if a := got.Status.Artifact; a == nil || a.Digest != good.Digest {
		t.Fatalf("status.artifact %+v, want the last good one", a)
	}
	if files := untar(t, download(t, got.Status.Artifact)); string(files["good.yaml"]) != "good\n" || files["evil.yaml"] != nil {
		t.Errorf("the served artifact holds %v", keys(files))
	}
}

// testOCIStalledRegistry: a registry that sends the layer's headers and
// then nothing is given up at spec.timeout (the reconcile returns and the
// object says why); the last good artifact stays.
func testOCIStalledRegistry(t *testing.T) {
	reg := testenv.NewRegistry(t)
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	pushFiles(t, reg, "app", "latest", "good", map[string]string{"good.yaml": "good\n"})
	var stall atomic.Bool
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if stall.Load() && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select { // until the client gives up (or the test ends)
			case <-req.Context().Done():
			case <-release:
			}
			return
		}
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: reg.Host()})
		}}).ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	t.Cleanup(func() { close(release) })
	obj := newOCIRepository(t, ns, "app", "oci://"+strings.TrimPrefix(front.URL, "http://")+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	good := waitOCIReady(t, obj).Status.Artifact
	pushFiles(t, reg, "app", "latest", "new", map[string]string{"new.yaml": "new\n"})
	stall.Store(true)
	requestOCIReconcile(t, obj)
	got := waitOCIFailed(t, obj, sourcev1.OCILayerOperationFailedReason)
	checkFailureMessage(t, got, "context deadline exceeded")
	if a := got.Status.Artifact; a == nil || a.Digest != good.Digest {
		t.Fatalf("status.artifact %+v, want the last good one", a)
	}
}

// testOCIHugeRegistryError: a registry answering with a 64 KiB error body
// (go-containerregistry quotes it whole) still leaves the object
// Ready=False with a message the API accepts (conditions hold 32768).
func testOCIHugeRegistryError(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "ocirepo-")
	body := strings.Repeat("x", 64<<10)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/v2/" {
			return
		}
		http.Error(w, body, http.StatusBadGateway)
	}))
	t.Cleanup(front.Close)
	obj := newOCIRepository(t, ns, "app", "oci://"+strings.TrimPrefix(front.URL, "http://")+"/app", nil)
	got := waitOCIFailed(t, obj, sourcev1.OCIPullFailedReason)
	if n := len(readyMessage(got)); n == 0 || n > 32768 {
		t.Errorf("Ready message of %d bytes", n)
	}
}
