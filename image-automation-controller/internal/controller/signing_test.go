package controller

import (
	"bytes"
	"context"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
)

// signingKey returns an armored OpenPGP private key encrypted with
// passphrase, and its armored public key.
func signingKey(t *testing.T, passphrase string) (private, public []byte) {
	t.Helper()
	e, err := openpgp.NewEntity("Flux Bot", "", "flux@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub, priv bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
		t.Fatal(err)
	}
	w, _ = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return priv.Bytes(), pub.Bytes()
}

// signingKey.secretRef (type gpg): the pushed commit carries an OpenPGP
// signature by the Secret's git.asc, decrypted with its passphrase.
func TestBinarySignsCommitsWithTheSecretsOpenPGPKey(t *testing.T) {
	runBinary(t)
	ns := testenv.NewNamespace(t, kube, "iua-")
	r, _ := podinfoRepo(t, ns)
	priv, pub := signingKey(t, "s3cret")
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "signing"},
		Data: map[string][]byte{"git.asc": priv, "passphrase": []byte("s3cret")}})
	policy(t, ns, "podinfo", imagev1.ImageRef{Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"})
	a := automation(ns, "podinfo", func(a *imagev1.ImageUpdateAutomation) {
		a.Spec.GitSpec.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: "signing"}}
	})
	create(t, gitRepository(ns, "podinfo", r.URL()), a)
	testenv.WaitFor(t, kube, a, "a pushed commit", func() bool { return ready(a) && a.Status.LastPushCommit != "" })
	repo, err := git.CloneContext(context.Background(), memory.NewStorage(), nil, &git.CloneOptions{URL: r.URL()})
	if err != nil {
		t.Fatal(err)
	}
	commit, err := repo.CommitObject(plumbing.NewHash(a.Status.LastPushCommit))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commit.Verify(string(pub)); err != nil {
		t.Errorf("the pushed commit's signature does not verify: %v", err)
	}
}
