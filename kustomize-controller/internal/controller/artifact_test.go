package controller

import (
	"archive/tar"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHostileArtifact serves artifacts with an entry leaving the root, an
// absolute entry and a symbolic link to /etc, each with a correct digest:
// each is refused with ArtifactFailed naming the entry, and nothing is
// written outside (or inside) the controller's filesystem.
func TestHostileArtifact(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	escape := filepath.Join(os.TempDir(), "eddy-hostile-"+ns)
	depth := strings.Repeat("../", 12)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: " + ns + "}\n"
	cases := map[string]struct {
		archive []byte
		want    string
	}{
		"dotdot": {artifacttest.TarGz(t, artifacttest.Entry{Name: "cm.yaml", Type: tar.TypeReg, Content: cm},
			artifacttest.Entry{Name: depth + strings.TrimPrefix(escape, "/"), Type: tar.TypeReg, Content: "pwned"}),
			`leaves the extraction directory`},
		"absolute": {artifacttest.TarGz(t, artifacttest.Entry{Name: "cm.yaml", Type: tar.TypeReg, Content: cm},
			artifacttest.Entry{Name: escape, Type: tar.TypeReg, Content: "pwned"}),
			`has an absolute or invalid name`},
		"symlink": {artifacttest.TarGz(t, artifacttest.Entry{Name: "etc", Type: tar.TypeSymlink, Link: "/etc"},
			artifacttest.Entry{Name: "cm.yaml", Type: tar.TypeReg, Content: cm}),
			`entry "etc" is a link or special file`},
	}
	files := map[string][]byte{}
	for name, c := range cases {
		files["/"+name+".tar.gz"] = c.archive
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := files[r.URL.Path]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()

	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			// A suspended source keeps the status the test writes.
			src := &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: sourcev1.GitRepositorySpec{URL: "http://127.0.0.1:1/none.git", Interval: metav1.Duration{Duration: time.Hour},
					Suspend: true},
			}
			if err := env.Client.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			base := src.DeepCopy()
			src.Status.Artifact = signed(t, sourcev1.GitRepositoryKind, src, &meta.Artifact{Path: "gitrepository/x.tar.gz", URL: srv.URL + "/" + name + ".tar.gz",
				Revision: "main@sha1:0123456789abcdef0123456789abcdef01234567", Digest: digest.FromBytes(c.archive).String(),
				LastUpdateTime: metav1.Now()})
			if err := env.Client.Status().Patch(ctx, src, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
			k := newKustomization(t, ns, name, name, nil)
			cond := waitFailed(t, k, meta.ArtifactFailedReason)
			t.Logf("Ready=False %s: %s", cond.Reason, cond.Message)
			if !strings.Contains(cond.Message, "unsafe archive") || !strings.Contains(cond.Message, c.want) {
				t.Errorf("message %q, want the unsafe entry named (%s)", cond.Message, c.want)
			}
			if strings.Contains(cond.Message, os.TempDir()+"/kustomization") {
				t.Errorf("message reveals a controller path: %q", cond.Message)
			}
			if _, err := os.Lstat(escape); !os.IsNotExist(err) {
				t.Errorf("a file was written outside: %s (%v)", escape, err)
			}
			if k.Status.Inventory != nil && len(k.Status.Inventory.Entries) != 0 {
				t.Errorf("objects applied from a hostile artifact: %v", k.Status.Inventory)
			}
		})
	}
}

// signed returns art signed for src of kind with the cluster's key, as
// source-controller would publish it: the tests' artifact servers stand in
// for source-controller's.
func signed(t *testing.T, kind string, src client.Object, art *meta.Artifact) *meta.Artifact {
	t.Helper()
	owner := artifact.Owner{Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName()}
	return artifacttest.SignInCluster(t, env.Client, artifact.KeyNamespace(), owner, art)
}
