// Package cosigntest signs OCI artifacts in a test registry with cosign's
// own Go libraries (key generation, payload, signature layout, upload), and
// verifies them with cosign's verifier, so that source-controller's
// verifier is checked against what the real tool writes and accepts. Only
// tests import it: cosign stays out of the binaries.
package cosigntest

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v3/pkg/oci/remote"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Key is a cosign key pair, as `cosign generate-key-pair` makes it.
type Key struct {
	// PublicPEM is cosign.pub: what a verify Secret's `*.pub` key holds.
	PublicPEM []byte
	sv        signature.SignerVerifier
}

// NewKey generates a key pair with cosign's library (ECDSA P-256, the
// private key encrypted with an empty password, then loaded back).
func NewKey(t testing.TB) *Key {
	t.Helper()
	pass := func(bool) ([]byte, error) { return []byte{}, nil }
	kb, err := cosign.GenerateKeyPair(pass)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := cosign.LoadPrivateKey(kb.PrivateBytes, []byte{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{PublicPEM: kb.PublicBytes, sv: sv}
}

// Sign signs the artifact at ref as `cosign sign --key` does in its .sig
// tag layout, appending to the signatures already there.
func (k *Key) Sign(t testing.TB, ref name.Digest, opts ...remote.Option) {
	t.Helper()
	k.SignClaiming(t, ref, ref, opts...)
}

// SignClaiming signs a payload that names claimed's digest and attaches it
// to the artifact at ref: a signature made for another artifact.
func (k *Key) SignClaiming(t testing.TB, ref, claimed name.Digest, opts ...remote.Option) {
	t.Helper()
	p, err := (&payload.Cosign{Image: claimed}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := k.sv.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	attach(t, ref, p, base64.StdEncoding.EncodeToString(sig), opts...)
}

// AttachTampered attaches to ref a signature by k whose payload was
// changed after signing: the signature no longer matches it.
func (k *Key) AttachTampered(t testing.TB, ref name.Digest, opts ...remote.Option) {
	t.Helper()
	p, err := (&payload.Cosign{Image: ref}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	sig, err := k.sv.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(p, []byte(`"optional":null`), []byte(`"optional":{"x":"y"}`), 1)
	attach(t, ref, tampered, base64.StdEncoding.EncodeToString(sig), opts...)
}

func attach(t testing.TB, ref name.Digest, p []byte, b64sig string, opts ...remote.Option) {
	t.Helper()
	ro := ociremote.WithRemoteOptions(opts...)
	s, err := static.NewSignature(p, b64sig)
	if err != nil {
		t.Fatal(err)
	}
	se, err := ociremote.SignedEntity(ref, ro)
	if err != nil {
		t.Fatal(err)
	}
	se, err = mutate.AttachSignatureToEntity(se, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(ref.Repository, se, ro); err != nil {
		t.Fatal(err)
	}
}

// Verify is cosign's own key-based verification of ref (`cosign verify
// --key --insecure-ignore-tlog`): nil when a signature verifies.
func Verify(ctx context.Context, ref name.Digest, publicPEM []byte, opts ...remote.Option) error {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(publicPEM)
	if err != nil {
		return err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	co := &cosign.CheckOpts{
		SigVerifier:        v,
		IgnoreTlog:         true,
		Offline:            true,
		ClaimVerifier:      cosign.SimpleClaimVerifier,
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(opts...)},
	}
	_, _, err = cosign.VerifyImageSignatures(ctx, ref, co)
	return err
}
