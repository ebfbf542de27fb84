package controller

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A tenant may patch status.artifact: pointing it at one of the object's
// own stored files (an older one, kept by the retention) with that file's
// digest and a revision of their choice must not make source-controller
// sign that tuple, or consumers apply old content under a revision the
// source never produced (and OCIRepository/HelmRepository/GitRepository
// then see the revision "up to date" and never rebuild). An artifact that
// source-controller did sign keeps being kept, re-signed with its new URL.
func TestStatusArtifactIsOnlyResignedWhenSigned(t *testing.T) {
	ctx := context.Background()
	st, err := artifact.NewStorage(filepath.Join(t.TempDir(), "data"), "127.0.0.1:1", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	owner := artifact.Owner{Kind: sourcev1.GitRepositoryKind, Namespace: "team-a", Name: "app"}
	p := path.Join(artifact.ObjectDir(owner.Kind, owner.Namespace, owner.Name), "old.tar.gz")
	data := []byte("an older artifact, still in storage")
	if err := os.MkdirAll(filepath.Dir(st.LocalPath(meta.Artifact{Path: p})), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.LocalPath(meta.Artifact{Path: p}), data, 0o644); err != nil {
		t.Fatal(err)
	}
	keys := artifact.StaticKey("0123456789abcdef0123456789abcdef")
	r := &GitRepositoryReconciler{Storage: st, Signer: &Signer{Keys: keys}}
	if err := r.Signer.ready(ctx); err != nil {
		t.Fatal(err)
	}
	stored := meta.Artifact{Path: p, URL: "http://old-host/" + p, Digest: digest.FromBytes(data).String(), Revision: "main@sha1:1111111111111111111111111111111111111111"}

	forged := stored.DeepCopy()
	forged.Revision = "main@sha1:2222222222222222222222222222222222222222" // HEAD's, say
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name}}
	obj.Status.Artifact = forged
	r.reconcileStorage(ctx, obj)
	if a := obj.Status.Artifact; a != nil && artifact.VerifySignature(ctx, keys, owner, a) == nil {
		t.Errorf("a forged status artifact was signed by source-controller: revision %q", a.Revision)
	}

	obj.Status.Artifact = artifact.Sign(keys, owner, &stored)
	r.reconcileStorage(ctx, obj)
	a := obj.Status.Artifact
	if a == nil {
		t.Fatal("a signed stored artifact was dropped")
	}
	if a.URL != st.URL(p) || artifact.VerifySignature(ctx, keys, owner, a) != nil {
		t.Errorf("a signed stored artifact was not re-signed with its new URL: %+v", a)
	}
}
