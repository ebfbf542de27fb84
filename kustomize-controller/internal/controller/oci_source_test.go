package controller

import (
	"archive/tar"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// artifactServer serves tar.gz artifacts by path; what a path serves can
// change, as a source-controller's storage does between two status updates.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func newArtifactServer(t *testing.T) *artifactServer {
	s := &artifactServer{files: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

// serve makes path serve b and returns its URL.
func (s *artifactServer) serve(path string, b []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = b
	return s.URL + path
}

// configMapArtifact is an artifact holding ConfigMap app in ns with data v.
func configMapArtifact(t *testing.T, ns, v string) []byte {
	return artifacttest.TarGz(t, artifacttest.Entry{Name: "cm.yaml", Type: tar.TypeReg,
		Content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: " + ns + "}\ndata: {v: \"" + v + "\"}\n"})
}

// TestOCIRepositorySource: a Kustomization with sourceRef kind
// OCIRepository applies the OCIRepository's artifact (fetched and checked by
// digest as a GitRepository's), with its origin revision; a new artifact
// revision reaches it through the OCIRepository watch (its interval is an
// hour); a downloaded artifact whose digest differs from the advertised one
// is Ready=False ArtifactFailed, Flux v1.10.1's message, and retried at
// --requeue-dependency (1s here) until the served bytes match. The
// OCIRepository is suspended so that its status is the test's. Run by the
// in-process reconciler and by the built binary.
func TestOCIRepositorySource(t *testing.T) {
	srv := newArtifactServer(t)
	for _, run := range []struct {
		name  string
		shard func(*kustomizev1.Kustomization)
	}{{"in-process", nil}, {"binary", sharded}} {
		t.Run(run.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			repo := &sourcev1.OCIRepository{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
				Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.example/app", Interval: &metav1.Duration{Duration: time.Hour},
					Reference: &sourcev1.OCIRepositoryRef{Tag: "latest"}, Suspend: true},
			}
			if err := env.Client.Create(ctx, repo); err != nil {
				t.Fatal(err)
			}
			setArtifact := func(rev, url string, b []byte) {
				t.Helper()
				base := repo.DeepCopy()
				repo.Status.Artifact = signed(t, sourcev1.OCIRepositoryKind, repo, &meta.Artifact{Path: "ocirepository/" + ns + "/app/x.tar.gz", URL: url, Revision: rev,
					Digest: digest.FromBytes(b).String(), LastUpdateTime: metav1.Now(),
					Metadata: map[string]string{"org.opencontainers.image.revision": "main@sha1:" + strings.Repeat("1", 40)}})
				if err := env.Client.Status().Patch(ctx, repo, client.MergeFrom(base)); err != nil {
					t.Fatal(err)
				}
			}
			configMap := func() string {
				t.Helper()
				cm := &corev1.ConfigMap{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
					t.Fatal(err)
				}
				return cm.Data["v"]
			}

			v1 := configMapArtifact(t, ns, "one")
			rev1 := "latest@" + digest.FromBytes([]byte(ns+"1")).String()
			setArtifact(rev1, srv.serve("/"+ns+"/1.tar.gz", v1), v1)
			k := newKustomization(t, ns, "app", "app", func(k *kustomizev1.Kustomization) {
				k.Spec.SourceRef.Kind = sourcev1.OCIRepositoryKind
				if run.shard != nil {
					run.shard(k)
				}
			})
			waitApplied(t, k, rev1)
			if got := configMap(); got != "one" {
				t.Errorf("ConfigMap v = %q after %s, want one", got, rev1)
			}
			if k.Status.LastAppliedOriginRevision != "main@sha1:"+strings.Repeat("1", 40) {
				t.Errorf("lastAppliedOriginRevision %q, want the artifact's org.opencontainers.image.revision", k.Status.LastAppliedOriginRevision)
			}

			// A new revision: the watch, not the hour's interval, applies it.
			v2 := configMapArtifact(t, ns, "two")
			rev2 := "latest@" + digest.FromBytes([]byte(ns+"2")).String()
			setArtifact(rev2, srv.serve("/"+ns+"/2.tar.gz", v2), v2)
			waitApplied(t, k, rev2)
			if got := configMap(); got != "two" {
				t.Errorf("ConfigMap v = %q after %s, want two", got, rev2)
			}

			// The status advertises v3's digest while the storage still serves v2.
			v3 := configMapArtifact(t, ns, "three")
			rev3 := "latest@" + digest.FromBytes([]byte(ns+"3")).String()
			setArtifact(rev3, srv.serve("/"+ns+"/3.tar.gz", v2), v3)
			cond := waitFailed(t, k, meta.ArtifactFailedReason)
			if want := "Source is not ready, artifact digest changed, retrying in 1s"; cond.Message != want {
				t.Errorf("Ready=False message %q, want %q", cond.Message, want)
			}
			if got := configMap(); got != "two" {
				t.Errorf("ConfigMap v = %q after a digest mismatch, want two kept", got)
			}
			// Only the requeue, no change of any object, sees the right bytes.
			srv.serve("/"+ns+"/3.tar.gz", v3)
			waitApplied(t, k, rev3)
			if got := configMap(); got != "three" {
				t.Errorf("ConfigMap v = %q after %s, want three", got, rev3)
			}
		})
	}
}
