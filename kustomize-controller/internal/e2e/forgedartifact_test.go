package e2e

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tenantServer is a tenant's HTTP server: it counts requests and answers
// each with an endless stream of zeros, counting the bytes written.
type tenantServer struct {
	*httptest.Server
	hits, written atomic.Int64
}

func newTenantServer(t *testing.T) *tenantServer {
	s := &tenantServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		buf := make([]byte, 32<<10)
		for r.Context().Err() == nil {
			n, err := w.Write(buf)
			s.written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// TestForgedArtifactIsRefused: a tenant who may patch their GitRepository's
// status (Flux's flux-edit role) suspends it and writes an artifact of
// their own. The built kustomize-controller, with its default flags,
// fetches only what source-controller signed for that object: a URL of the
// tenant's gets no request, another tenant's real artifact copied over is
// refused (it is not served from the digest-keyed cache), the refusal is
// the Kustomization's ArtifactFailed; a signed artifact whose body is longer
// than its size is cut at its size; the controller's temporary directory
// never grows past that; another tenant's Kustomization reconciles
// meanwhile.
func TestForgedArtifactIsRefused(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the controller's temporary directory
	startKustomizeController(t, "--requeue-dependency=1s", "--min-retry-delay=200ms", "--max-retry-delay=1s")

	victimSrc, victim := setup(t, map[string]string{"cm.yaml": configMap("victim-only", "  secret: \"of team b\"\n")}, nil)
	waitFor(t, victim, "the other tenant's Kustomization Ready", func() bool { return ready(victim) })
	waitFor(t, victimSrc, "an artifact", func() bool { return victimSrc.Status.Artifact != nil })
	src, k := setup(t, map[string]string{"cm.yaml": configMap("tenant-own", "  a: \"1\"\n")}, nil)
	waitFor(t, k, "the tenant's Kustomization Ready", func() bool { return ready(k) })

	base := src.DeepCopy()
	src.Spec.Suspend = true
	if err := env.Client.Patch(ctx, src, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "the suspension observed", func() bool { return src.Status.ObservedGeneration == src.Generation })

	srv := newTenantServer(t)
	owner := artifact.Owner{Kind: sourcev1.GitRepositoryKind, Namespace: src.Namespace, Name: src.Name}
	size := int64(1 << 20)
	copied := victimSrc.Status.Artifact.DeepCopy()
	pointed := copied.DeepCopy()
	pointed.URL = srv.URL + "/gitrepository/x.tar.gz"
	pointed.Revision = "main@sha1:" + strings.Repeat("d", 40)
	var maxTmp int64
	mismatch := "the signature of " + owner.String() + "'s artifact does not match"
	refused := []struct {
		name   string
		forged *meta.Artifact
		want   string
	}{
		{"another tenant's artifact copied", copied, mismatch},
		{"another tenant's signature, a URL of the tenant's", pointed, mismatch},
		{"a URL of the tenant's", &meta.Artifact{Path: "gitrepository/x.tar.gz", URL: srv.URL + "/zeros.tar.gz", Revision: "main@sha1:" + strings.Repeat("f", 40),
			Digest: "sha256:" + strings.Repeat("0", 64), Size: &size, LastUpdateTime: metav1.Now()}, "the artifact of " + owner.String() + " carries no signature"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			patchArtifact(t, src, c.forged)
			cond := waitArtifactFailed(t, k, c.forged.Revision, "artifact not published by source-controller: "+c.want)
			if !strings.Contains(cond.Message, owner.String()) || strings.Contains(cond.Message, srv.URL) {
				t.Errorf("message %q should name %s and not the URL", cond.Message, owner)
			}
			t.Logf("Ready=False %s: %s", cond.Reason, cond.Message)
			if n := srv.hits.Load(); n != 0 {
				t.Fatalf("the refused URL got %d requests", n)
			}
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: "victim-only"}, &corev1.ConfigMap{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("the other tenant's tree was applied in the tenant's namespace (%v)", err)
			}
			maxTmp = max(maxTmp, dirBytes(tmp))
		})
	}

	// The test plays source-controller (it reads the key) to sign an
	// artifact whose server streams zeros past its size: the body is cut
	// at the size, never written past it.
	t.Run("a signed artifact longer than its size", func(t *testing.T) {
		big := int64(12 << 20) // past the in-memory bound: a temporary file
		a := artifacttest.SignInCluster(t, env.Client, artifact.KeyNamespace(), owner, &meta.Artifact{Path: "gitrepository/x.tar.gz",
			URL: srv.URL + "/signed.tar.gz", Revision: "main@sha1:" + strings.Repeat("e", 40),
			Digest: "sha256:" + strings.Repeat("0", 64), Size: &big, LastUpdateTime: metav1.Now()})
		stop, sampled := make(chan struct{}), make(chan int64)
		go func() { // samples the temporary directory until stopped
			var most int64
			for {
				most = max(most, dirBytes(tmp))
				select {
				case <-stop:
					sampled <- most
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		patchArtifact(t, src, a)
		cond := waitArtifactFailed(t, k, a.Revision, "body longer than 12582912 bytes")
		close(stop)
		maxTmp = max(maxTmp, <-sampled)
		t.Logf("Ready=False %s: %s", cond.Reason, cond.Message)
		if srv.hits.Load() == 0 {
			t.Fatal("the signed artifact was not fetched")
		}
		if n := srv.written.Load(); n > 8*big {
			t.Errorf("the tenant's server wrote %d bytes for %d requests: the body was not cut at %d", n, srv.hits.Load(), big)
		}
		if maxTmp > big {
			t.Errorf("the temporary directory grew to %d bytes, past the cap of %d", maxTmp, big)
		}
		t.Logf("%d requests, %d bytes written by the server, temporary directory at most %d bytes", srv.hits.Load(), srv.written.Load(), maxTmp)
	})

	// Meanwhile another tenant's new Kustomization reconciles.
	other := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "more", Namespace: victim.Namespace},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true, TargetNamespace: victim.Namespace,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: victimSrc.Name}},
	}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitFor(t, other, "another tenant's Kustomization Ready while the forged one fails", func() bool { return ready(other) })
	if c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("the forged Kustomization: %v", c)
	}
}

// patchArtifact writes a as src's status artifact, as a tenant with the
// right to patch */status can, and asks src's Kustomizations to reconcile
// (the artifact's revision changed: the controller's watch does).
func patchArtifact(t *testing.T, src *sourcev1.GitRepository, a *meta.Artifact) {
	t.Helper()
	base := src.DeepCopy()
	src.Status.Artifact = a
	if err := env.Client.Status().Patch(context.Background(), src, client.MergeFrom(base)); err != nil {
		t.Error(err)
	}
}

// waitArtifactFailed waits until k attempted revision rev and is
// Ready=False ArtifactFailed with a message containing want, and returns
// that condition.
func waitArtifactFailed(t *testing.T, k *kustomizev1.Kustomization, rev, want string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	waitFor(t, k, "Ready=False ArtifactFailed at "+rev+": "+want, func() bool {
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		if k.Status.LastAttemptedRevision != rev || c == nil || c.Status != metav1.ConditionFalse || c.Reason != meta.ArtifactFailedReason || !strings.Contains(c.Message, want) {
			return false
		}
		got = *c
		return true
	})
	return got
}
