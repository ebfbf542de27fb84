package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newPGPKey makes an OpenPGP key (Ed25519, fast to generate) and returns
// it with its armored public key ring.
func newPGPKey(t testing.TB, name string) (*openpgp.Entity, string) {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return e, b.String()
}

var testSignature = &object.Signature{Name: "Tester", Email: "tester@example.com", When: time.Unix(1700000000, 0)}

// commitSigned writes files to r's work tree, commits them with go-git,
// signed by key (nil: unsigned), pushes to main and returns the commit.
func commitSigned(t testing.TB, r *repo, key *openpgp.Entity, files map[string]string, msg string) string {
	t.Helper()
	g, err := git.PlainOpen(r.Work)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := g.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(r.Work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: testSignature, SignKey: key, AllowEmptyCommits: true})
	if err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", "--force", r.Bare, "HEAD:main")
	return h.String()
}

// tagSigned creates the annotated tag name at HEAD, signed by key (nil:
// unsigned), pushes it and returns the tag object's hash.
func tagSigned(t testing.TB, r *repo, key *openpgp.Entity, name string) string {
	t.Helper()
	g, err := git.PlainOpen(r.Work)
	if err != nil {
		t.Fatal(err)
	}
	head, err := g.Head()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := g.CreateTag(name, head.Hash(), &git.CreateTagOptions{Tagger: testSignature, Message: "release " + name, SignKey: key})
	if err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", "--force", r.Bare, plumbing.NewTagReferenceName(name).String())
	return ref.Hash().String()
}

// newKeysSecret creates the Secret ns/name with data.
func newKeysSecret(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// verifying returns a mutation asking for mode with the keys of Secret "keys".
func verifying(mode sourcev1.GitVerificationMode, ref sourcev1.GitRepositoryRef) func(*sourcev1.GitRepository) {
	return func(o *sourcev1.GitRepository) {
		o.Spec.Reference = &ref
		o.Spec.Verification = &sourcev1.GitRepositoryVerification{Mode: mode, SecretRef: meta.LocalObjectReference{Name: "keys"}}
	}
}

// deleteSecret deletes the Secret ns/name.
func deleteSecret(t testing.TB, ns, name string) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
}
