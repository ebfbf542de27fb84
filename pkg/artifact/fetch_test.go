package artifact_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/artifact"
)

func TestFetchVerifiesAndExtracts(t *testing.T) {
	data, _ := archive(t, writeTree(t, map[string]string{"app/deploy.yaml": "kind: Deployment"}), nil)
	sum := sha256.Sum256(data)
	good := "sha256:" + hex.EncodeToString(sum[:])
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.tar.gz":
			w.Write(data)
		case "/flaky.tar.gz":
			if hits.Add(1) < 3 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.Write(data)
		case "/hostile.tar.gz":
			w.Write(makeTarGz(t, tarEntry{Name: "../escape.yaml", Type: '0', Body: "x"}))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := &artifact.Fetcher{Retries: 3, RetryWait: 10 * time.Millisecond}
	ctx := context.Background()

	dir := t.TempDir()
	if err := f.Fetch(ctx, srv.URL+"/ok.tar.gz", good, dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "app", "deploy.yaml")); string(got) != "kind: Deployment" {
		t.Errorf("extracted %q", got)
	}
	if err := f.Fetch(ctx, srv.URL+"/ok.tar.gz", hex.EncodeToString(sum[:]), t.TempDir()); err != nil {
		t.Errorf("a bare hex digest is taken as sha256: %v", err)
	}
	if err := f.Fetch(ctx, srv.URL+"/flaky.tar.gz", good, t.TempDir()); err != nil {
		t.Errorf("5xx answers are retried: %v", err)
	}
	bad := "sha256:" + strings.Repeat("0", 64)
	empty := t.TempDir()
	if err := f.Fetch(ctx, srv.URL+"/ok.tar.gz", bad, empty); err == nil || !strings.Contains(err.Error(), "failed to verify artifact") {
		t.Errorf("digest mismatch: got %v", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Error("an artifact failing verification was extracted")
	}
	if err := f.Fetch(ctx, srv.URL+"/missing.tar.gz", good, t.TempDir()); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("404: got %v, want ErrNotFound", err)
	}
	parent := t.TempDir()
	sub := filepath.Join(parent, "x")
	os.Mkdir(sub, 0o755)
	hd := makeTarGz(t, tarEntry{Name: "../escape.yaml", Type: '0', Body: "x"})
	hs := sha256.Sum256(hd)
	if err := f.Fetch(ctx, srv.URL+"/hostile.tar.gz", "sha256:"+hex.EncodeToString(hs[:]), sub); !errors.Is(err, artifact.ErrUnsafeArchive) {
		t.Errorf("hostile artifact: got %v, want ErrUnsafeArchive", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "escape.yaml")); err == nil {
		t.Error("a hostile entry was written outside the directory")
	}
}
