package controller

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// The built source-controller started over the storage of a run that
// crashed removes what that run left: its work directories (clones,
// downloads), the temporary files of interrupted artifact writes, and the
// artifacts of objects deleted meanwhile; it keeps the artifacts of live
// objects and does not serve its work directory.
func TestBinaryStartPurgesStaleWork(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	ns := newNamespace(t)
	// A live object (reconciled in process, not by the binary).
	newGitRepository(t, ns, "live", newRepo(t, nil).URL(), nil)
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // path under data: kept
		".work/gitrepository-123/.git/HEAD":                 false,
		".work/helmchart-456/chart.tgz":                     false,
		"gitrepository/" + ns + "/live/.abc.tar.gz.tmp-789": false,
		"gitrepository/" + ns + "/live/abc.tar.gz":          true,
		"gitrepository/" + ns + "/deleted/def.tar.gz":       false,
		"helmchart/" + ns + "/deleted/chart-0.1.0.tgz":      false,
	}
	for p := range files {
		full := filepath.Join(data, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("stale"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
	}
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=workdir", "--storage-path="+data,
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port))

	gone := func(p string) bool {
		_, err := os.Stat(filepath.Join(data, filepath.FromSlash(p)))
		return os.IsNotExist(err)
	}
	deadline := time.Now().Add(testenv.WaitTimeout)
	for p, kept := range files {
		for !kept && !gone(p) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if kept == gone(p) {
			t.Errorf("%s: kept %t, want %t", p, !gone(p), kept)
		}
	}
	if fi, err := os.Stat(filepath.Join(data, WorkDirName)); err != nil || !fi.IsDir() {
		t.Errorf("no work directory: %v", err)
	}
	for _, p := range []string{"/.work/", "/gitrepository/" + ns + "/live/abc.tar.gz"} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, p))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: http.StatusNotFound, false: http.StatusOK}[p == "/.work/"]; resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", p, resp.StatusCode, want)
		}
	}
}

// The built source-controller with --storage-max-bytes keeps no artifact
// that would bring its storage above the bound: the GitRepository is not
// Ready and says the storage is full, and nothing is stored.
func TestBinaryStorageMaxBytes(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=maxbytes", "--storage-path="+data,
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--storage-max-bytes=100")
	ns := newNamespace(t)
	obj := newGitRepository(t, ns, "big", newRepo(t, map[string]string{"big.txt": strings.Repeat("0123456789abcdef\n", 4096)}).URL(),
		func(o *sourcev1.GitRepository) { o.Labels = map[string]string{shardKey: "maxbytes"} })
	got := waitNotReady(t, obj)
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c == nil || !strings.Contains(c.Message, "artifact storage is full") {
		t.Errorf("Ready %+v, want a message saying the storage is full", c)
	}
	if got.Status.Artifact != nil {
		t.Errorf("artifact %s stored above the bound", got.Status.Artifact.Path)
	}
	if n, _ := (&artifact.Storage{BasePath: data}).Usage(); n > 100 {
		t.Errorf("storage holds %d bytes, above the bound of 100", n)
	}
}
