package artifact_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/fluxcd/pkg/apis/meta"
)

var owner = artifact.Owner{Kind: "GitRepository", Namespace: "team-a", Name: "app"}

func published() *meta.Artifact {
	size := int64(1234)
	return artifacttest.Sign(owner, &meta.Artifact{Path: "gitrepository/team-a/app/abc.tar.gz",
		URL: "http://source-controller.flux-system.svc/gitrepository/team-a/app/abc.tar.gz", Revision: "main@sha1:abc",
		Digest: "sha256:" + strings.Repeat("a", 64), Size: &size, Metadata: map[string]string{"other": "kept"}})
}

func TestVerifySignatureRefusesEveryChangedField(t *testing.T) {
	ctx := context.Background()
	keys := artifacttest.Keyring()
	if err := artifact.VerifySignature(ctx, keys, owner, published()); err != nil {
		t.Fatalf("a published artifact: %v", err)
	}
	if published().Metadata["other"] != "kept" {
		t.Error("signing dropped other metadata")
	}
	bigger := int64(1 << 30)
	cases := map[string]struct {
		owner  artifact.Owner
		change func(a *meta.Artifact)
	}{
		"unsigned":          {owner, func(a *meta.Artifact) { delete(a.Metadata, artifact.SignatureKey) }},
		"garbage signature": {owner, func(a *meta.Artifact) { a.Metadata[artifact.SignatureKey] = "hmac-sha256:00" }},
		"another host": {owner, func(a *meta.Artifact) {
			a.URL = strings.Replace(a.URL, "source-controller.flux-system.svc", "169.254.169.254", 1)
		}},
		"another path":           {owner, func(a *meta.Artifact) { a.URL += "x" }},
		"another digest":         {owner, func(a *meta.Artifact) { a.Digest = "sha256:" + strings.Repeat("b", 64) }},
		"another revision":       {owner, func(a *meta.Artifact) { a.Revision = "main@sha1:def" }},
		"another size":           {owner, func(a *meta.Artifact) { a.Size = &bigger }},
		"no size":                {owner, func(a *meta.Artifact) { a.Size = nil }},
		"another metadata value": {owner, func(a *meta.Artifact) { a.Metadata["other"] = "changed" }},
		"added origin revision": {owner, func(a *meta.Artifact) {
			a.Metadata["org.opencontainers.image.revision"] = "main@sha1:def"
		}},
		"copied to a namespace": {artifact.Owner{Kind: "GitRepository", Namespace: "team-b", Name: "app"}, func(*meta.Artifact) {}},
		"copied to a name":      {artifact.Owner{Kind: "GitRepository", Namespace: "team-a", Name: "other"}, func(*meta.Artifact) {}},
		"copied to a kind":      {artifact.Owner{Kind: "OCIRepository", Namespace: "team-a", Name: "app"}, func(*meta.Artifact) {}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := published()
			c.change(a)
			err := artifact.VerifySignature(ctx, keys, c.owner, a)
			if !errors.Is(err, artifact.ErrUnsigned) {
				t.Fatalf("got %v, want ErrUnsigned", err)
			}
			if !strings.Contains(err.Error(), c.owner.String()) || strings.Contains(err.Error(), "http") {
				t.Errorf("message %q should name the owner and no URL", err)
			}
		})
	}
	if err := artifact.VerifySignature(ctx, artifact.StaticKey("another key of 16+ bytes"), owner, published()); !errors.Is(err, artifact.ErrUnsigned) {
		t.Errorf("another key: got %v", err)
	}
	if err := artifact.VerifySignature(ctx, nil, owner, published()); err == nil {
		t.Error("no keyring must refuse")
	}
}

// rotating returns old until asked for a fresh key, then new.
type rotating struct{ old, new []byte }

func (r rotating) Key(_ context.Context, fresh bool) ([]byte, error) {
	if fresh {
		return r.new, nil
	}
	return r.old, nil
}

func TestVerifySignatureRereadsAReplacedKey(t *testing.T) {
	if err := artifact.VerifySignature(context.Background(), rotating{old: []byte("old key, long enough"), new: artifacttest.Key}, owner, published()); err != nil {
		t.Fatalf("a key replaced since the last read: %v", err)
	}
}

// countingServer serves data at /ok.tar.gz, an endless stream of zeros at
// /zeros.tar.gz (counting the bytes it wrote) and counts requests.
type countingServer struct {
	*httptest.Server
	hits, zeros atomic.Int64
}

func newCountingServer(t *testing.T, data []byte) *countingServer {
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch r.URL.Path {
		case "/ok.tar.gz":
			w.Write(data)
		case "/zeros.tar.gz":
			buf := make([]byte, 32<<10)
			for r.Context().Err() == nil {
				n, err := w.Write(buf)
				s.zeros.Add(int64(n))
				if err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestFetchArtifactChecksTheSignatureBeforeAnyRequest(t *testing.T) {
	data, _ := archive(t, writeTree(t, map[string]string{"app.yaml": "kind: ConfigMap"}), nil)
	srv := newCountingServer(t, data)
	size := int64(len(data))
	a := &meta.Artifact{URL: srv.URL + "/ok.tar.gz", Revision: "main@sha1:abc",
		Digest: fmt.Sprintf("sha256:%x", sha256.Sum256(data)), Size: &size}
	f := &artifact.Fetcher{Keys: artifacttest.Keyring(), RetryWait: time.Millisecond}
	ctx := context.Background()
	dir := t.TempDir()
	extract := func(r io.Reader, lim artifact.Limits) error { return artifact.Extract(r, dir, lim) }

	if err := f.FetchArtifact(ctx, owner, a, extract); !errors.Is(err, artifact.ErrUnsigned) {
		t.Fatalf("unsigned: got %v", err)
	}
	forged := artifacttest.Sign(artifact.Owner{Kind: "GitRepository", Namespace: "team-b", Name: "app"}, a)
	if err := f.FetchArtifact(ctx, owner, forged, extract); !errors.Is(err, artifact.ErrUnsigned) {
		t.Fatalf("signed for another object: got %v", err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("refused artifacts got %d requests", n)
	}
	if err := f.FetchArtifact(ctx, owner, artifacttest.Sign(owner, a), extract); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.yaml")); string(b) != "kind: ConfigMap" {
		t.Errorf("extracted %q", b)
	}
	f.HostOverride = strings.TrimPrefix(srv.URL, "http://")
	moved := artifacttest.Sign(owner, &meta.Artifact{URL: "http://source-controller.flux-system.svc/ok.tar.gz",
		Revision: a.Revision, Digest: a.Digest, Size: a.Size})
	if err := f.FetchArtifact(ctx, owner, moved, func(io.Reader, artifact.Limits) error { return nil }); err != nil {
		t.Errorf("the host override applies after the signature check: %v", err)
	}
}

func TestFetchArtifactCutsABodyAtItsSize(t *testing.T) {
	for _, size := range []int64{64 << 10, 12 << 20} { // in memory, in a temporary file
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			srv := newCountingServer(t, nil)
			a := artifacttest.Sign(owner, &meta.Artifact{URL: srv.URL + "/zeros.tar.gz", Revision: "r",
				Digest: "sha256:" + strings.Repeat("0", 64), Size: &size})
			f := &artifact.Fetcher{Keys: artifacttest.Keyring(), Retries: 3, RetryWait: time.Millisecond}
			used := false
			err := f.FetchArtifact(context.Background(), owner, a, func(io.Reader, artifact.Limits) error { used = true; return nil })
			if !errors.Is(err, artifact.ErrTooLarge) || used {
				t.Fatalf("got %v (used %v), want ErrTooLarge before any use", err, used)
			}
			if want := fmt.Sprintf("body longer than %d bytes", size); !strings.Contains(err.Error(), want) {
				t.Errorf("message %q, want %q", err, want)
			}
			if n := srv.hits.Load(); n != 1 {
				t.Errorf("an oversized body is not retried: %d requests", n)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
			// What the server could write before the cut: the cap plus
			// the connection's buffers, not the stream.
			if n := srv.zeros.Load(); n > size+8<<20 {
				t.Errorf("server wrote %d bytes for a cap of %d", n, size)
			}
		})
	}
}

func TestFetchArtifactRefusesASizeOverTheLimit(t *testing.T) {
	srv := newCountingServer(t, nil)
	size := int64(2 << 20)
	a := artifacttest.Sign(owner, &meta.Artifact{URL: srv.URL + "/zeros.tar.gz", Revision: "r",
		Digest: "sha256:" + strings.Repeat("0", 64), Size: &size})
	f := &artifact.Fetcher{Keys: artifacttest.Keyring(), Limits: artifact.Limits{MaxBytes: 1 << 20, MaxFiles: 10}}
	err := f.FetchArtifact(context.Background(), owner, a, func(io.Reader, artifact.Limits) error { return nil })
	if !errors.Is(err, artifact.ErrTooLarge) || srv.hits.Load() != 0 {
		t.Fatalf("got %v after %d requests, want ErrTooLarge and none", err, srv.hits.Load())
	}
	// Without a size the limit is the cap.
	a = artifacttest.Sign(owner, &meta.Artifact{URL: srv.URL + "/zeros.tar.gz", Revision: "r", Digest: a.Digest})
	if err := f.FetchArtifact(context.Background(), owner, a, func(io.Reader, artifact.Limits) error { return nil }); !errors.Is(err, artifact.ErrTooLarge) {
		t.Errorf("no size: got %v", err)
	}
}

func TestFetchArtifactChecksTheDigestBeforeUse(t *testing.T) {
	data, _ := archive(t, writeTree(t, map[string]string{"app.yaml": "kind: ConfigMap"}), nil)
	srv := newCountingServer(t, data)
	size := int64(len(data))
	a := artifacttest.Sign(owner, &meta.Artifact{URL: srv.URL + "/ok.tar.gz", Revision: "r",
		Digest: "sha256:" + strings.Repeat("0", 64), Size: &size})
	f := &artifact.Fetcher{Keys: artifacttest.Keyring(), Retries: 3, RetryWait: time.Millisecond}
	used := false
	err := f.FetchArtifact(context.Background(), owner, a, func(io.Reader, artifact.Limits) error { used = true; return nil })
	if !errors.Is(err, artifact.ErrDigestMismatch) || used || srv.hits.Load() != 1 {
		t.Fatalf("got %v (used %v, %d requests), want one ErrDigestMismatch and no use", err, used, srv.hits.Load())
	}
}
