// Package notationtest signs OCI artifacts with notation for tests: a test
// CA and its code-signing leaf, a signer that pushes the signature to a
// plain-HTTP registry on loopback, and trust policies. Only tests import it.
package notationtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	orasremote "oras.land/oras-go/v2/registry/remote"
)

// Envelope media types notation signs with.
const (
	JWS  = "application/jose+json"
	COSE = "application/cose"
)

// PKI is a root CA and a code-signing leaf it issued.
type PKI struct {
	CA      *x509.Certificate
	Leaf    *x509.Certificate
	LeafKey *ecdsa.PrivateKey
}

// NewPKI returns a CA named cn and a leaf with subject CN=<cn> signer,
// O=Eddy, valid for an hour from a minute ago.
func NewPKI(t testing.TB, cn string) *PKI {
	t.Helper()
	caKey := newKey(t)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Eddy"}, Country: []string{"US"}, Province: []string{"WA"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	ca := createCert(t, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	leafKey := newKey(t)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn + " signer", Organization: []string{"Eddy"}, Country: []string{"US"}, Province: []string{"WA"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	leaf := createCert(t, leafTmpl, ca, &leafKey.PublicKey, caKey)
	return &PKI{CA: ca, Leaf: leaf, LeafKey: leafKey}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func createCert(t testing.TB, tmpl, parent *x509.Certificate, pub, priv any) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CAPEM is the CA certificate in PEM, for a Secret's <name>.crt or .pem.
func (p *PKI) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw})
}

// Sign signs the artifact at ref ("<host>/<repo>@sha256:<hex>", on a
// plain-HTTP registry) with the leaf, in an envelope of mediaType, and
// pushes the signature as a referrer (or under the referrers tag schema
// where the registry has no referrers API).
func (p *PKI) Sign(t testing.TB, ref, mediaType string) {
	t.Helper()
	s, err := signer.NewGenericSigner(p.LeafKey, []*x509.Certificate{p.Leaf, p.CA})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := orasremote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	_, err = notation.Sign(context.Background(), s, registry.NewRepository(repo), notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: mediaType},
		ArtifactReference: ref,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TrustPolicy returns a trustpolicy.json with one statement "test" of
// level for scopes, trusting store ca:test and identities (every one
// when none is given).
func TrustPolicy(t testing.TB, level string, scopes []string, identities ...string) []byte {
	t.Helper()
	if len(identities) == 0 {
		identities = []string{"*"}
	}
	doc := map[string]any{
		"version": "1.0",
		"trustPolicies": []any{map[string]any{
			"name":                  "test",
			"registryScopes":        scopes,
			"signatureVerification": map[string]string{"level": level},
			"trustStores":           []string{"ca:test"},
			"trustedIdentities":     identities,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
