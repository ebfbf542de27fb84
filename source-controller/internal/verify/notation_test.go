package verify

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/source-controller/internal/verify/notationtest"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const secretName = "default/notation-config"

// newRegistry serves an empty registry on loopback; referrers says whether
// it answers the referrers API (else signatures go under the tag schema).
func newRegistry(t *testing.T, referrers bool) string {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(
		ggcrregistry.Logger(log.New(io.Discard, "", 0)),
		ggcrregistry.WithReferrersSupport(referrers)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pushArtifact pushes a one-layer OCI artifact holding content to
// host/repo:latest and returns its digest reference.
func pushArtifact(t *testing.T, host, repo, content string) name.Digest {
	t.Helper()
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		static.NewLayer([]byte(content), types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/" + repo + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

func secretData(policy []byte, certs ...[]byte) map[string][]byte {
	data := map[string][]byte{NotationTrustPolicyKey: policy}
	for i, c := range certs {
		data[[]string{"ca.crt", "other.pem"}[i]] = c
	}
	return data
}

func verifyWith(t *testing.T, data map[string][]byte, ref name.Digest) error {
	t.Helper()
	v, err := NewNotation(secretName, data)
	if err != nil {
		t.Fatalf("NewNotation: %v", err)
	}
	return v.Verify(context.Background(), ref)
}

func TestNotationVerifiesSignatureFromTrustedCA(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	other := notationtest.NewPKI(t, "other")
	policy := notationtest.TrustPolicy(t, "strict", []string{"*"})
	for _, tc := range []struct {
		name      string
		referrers bool
		envelope  string
	}{
		{"referrers API, JWS", true, notationtest.JWS},
		{"referrers tag schema, COSE", false, notationtest.COSE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := newRegistry(t, tc.referrers)
			ref := pushArtifact(t, host, "app", "manifests")
			pki.Sign(t, ref.Name(), tc.envelope)
			// The trusted CA is one of two certificate keys.
			if err := verifyWith(t, secretData(policy, other.CAPEM(), pki.CAPEM()), ref); err != nil {
				t.Fatalf("signed artifact did not verify: %v", err)
			}
		})
	}
}

func TestNotationScopeNamingTheRepositoryVerifies(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	host := newRegistry(t, true)
	ref := pushArtifact(t, host, "team/app", "manifests")
	pki.Sign(t, ref.Name(), notationtest.JWS)
	policy := notationtest.TrustPolicy(t, "strict", []string{host + "/team/app"}, "x509.subject: C=US, ST=WA, O=Eddy, CN=trusted signer")
	if err := verifyWith(t, secretData(policy, pki.CAPEM()), ref); err != nil {
		t.Fatalf("signed artifact did not verify: %v", err)
	}
}

func TestNotationReadsSignaturesWithTheRemoteOptions(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	// One registry behind two servers: the open one to push and sign, the
	// other asking for basic auth.
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))
	open := httptest.NewServer(h)
	t.Cleanup(open.Close)
	closed := httptest.NewServer(testenv.RequireBasicAuth(h, "user", "pass"))
	t.Cleanup(closed.Close)
	signed := pushArtifact(t, strings.TrimPrefix(open.URL, "http://"), "app", "manifests")
	pki.Sign(t, signed.Name(), notationtest.JWS)
	ref, err := name.NewDigest(strings.TrimPrefix(closed.URL, "http://") + "/app@" + signed.DigestStr())
	if err != nil {
		t.Fatal(err)
	}
	data := secretData(notationtest.TrustPolicy(t, "strict", []string{"*"}), pki.CAPEM())
	if err := verifyWith(t, data, ref); err == nil || errors.Is(err, ErrNoSignature) {
		t.Fatalf("without credentials: want an authentication failure, got %v", err)
	}
	v, err := NewNotation(secretName, data, remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(context.Background(), ref); err != nil {
		t.Fatalf("with the registry's credentials: %v", err)
	}
}

func TestNotationUnsignedArtifactHasNoSignature(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	for _, referrers := range []bool{true, false} {
		host := newRegistry(t, referrers)
		ref := pushArtifact(t, host, "app", "unsigned")
		err := verifyWith(t, secretData(notationtest.TrustPolicy(t, "strict", []string{"*"}), pki.CAPEM()), ref)
		if !errors.Is(err, ErrNoSignature) {
			t.Fatalf("referrers API %v: want ErrNoSignature, got %v", referrers, err)
		}
		want := `no signature is associated with "` + ref.Name() + `", make sure the artifact was signed successfully`
		if err.Error() != want {
			t.Fatalf("message %q, want Flux's %q", err, want)
		}
	}
}

func TestNotationRefusesSignatureFromUntrustedCA(t *testing.T) {
	signer := notationtest.NewPKI(t, "untrusted")
	trusted := notationtest.NewPKI(t, "trusted")
	host := newRegistry(t, true)
	ref := pushArtifact(t, host, "app", "manifests")
	signer.Sign(t, ref.Name(), notationtest.JWS)
	err := verifyWith(t, secretData(notationtest.TrustPolicy(t, "strict", []string{"*"}), trusted.CAPEM()), ref)
	if err == nil || errors.Is(err, ErrNoSignature) || errors.Is(err, ErrNotEnforced) {
		t.Fatalf("want a verification failure, got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "signature verification failed\nfailed to verify signature with digest sha256:") ||
		!strings.Contains(err.Error(), "the signature's certificate chain does not contain any trusted certificate") {
		t.Fatalf("unexpected message %q", err)
	}
}

func TestNotationRefusesIdentityNotTrusted(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	host := newRegistry(t, true)
	ref := pushArtifact(t, host, "app", "manifests")
	pki.Sign(t, ref.Name(), notationtest.JWS)
	policy := notationtest.TrustPolicy(t, "strict", []string{"*"}, "x509.subject: C=US, ST=WA, O=Eddy, CN=someone else")
	err := verifyWith(t, secretData(policy, pki.CAPEM()), ref)
	if err == nil || !strings.Contains(err.Error(), "does not match the X.509 trusted identities") {
		t.Fatalf("want an identity mismatch, got %v", err)
	}
}

func TestNotationRefusesRepositoryOutsideRegistryScopes(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	host := newRegistry(t, true)
	ref := pushArtifact(t, host, "app", "manifests")
	pki.Sign(t, ref.Name(), notationtest.JWS)
	policy := notationtest.TrustPolicy(t, "strict", []string{host + "/other"})
	err := verifyWith(t, secretData(policy, pki.CAPEM()), ref)
	want := `artifact "` + ref.Name() + `" has no applicable trust policy statement. Trust policy applicability for a given artifact is determined by registryScopes.`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("want %q..., got %v", want, err)
	}
}

func TestNotationPolicyNotEnforcingLetsArtifactThrough(t *testing.T) {
	signer := notationtest.NewPKI(t, "untrusted")
	trusted := notationtest.NewPKI(t, "trusted")
	host := newRegistry(t, true)
	signed := pushArtifact(t, host, "app", "signed")
	signer.Sign(t, signed.Name(), notationtest.JWS)
	unsigned := pushArtifact(t, host, "app", "unsigned")
	for _, tc := range []struct {
		level string
		ref   name.Digest
	}{
		{"skip", unsigned},
		{"audit", signed}, // authenticity fails, and audit only logs it
	} {
		err := verifyWith(t, secretData(notationtest.TrustPolicy(t, tc.level, []string{"*"}), trusted.CAPEM()), tc.ref)
		if !errors.Is(err, ErrNotEnforced) {
			t.Fatalf("level %s: want ErrNotEnforced, got %v", tc.level, err)
		}
	}
}

func TestNotationSecretErrorsAreFlux(t *testing.T) {
	pki := notationtest.NewPKI(t, "trusted")
	policy := notationtest.TrustPolicy(t, "strict", []string{"*"})
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"no trust policy", map[string][]byte{"ca.crt": pki.CAPEM()},
			"'trustpolicy.json' not found in secret 'default/notation-config'"},
		{"no certificate", map[string][]byte{NotationTrustPolicyKey: policy, "ca.key": pki.CAPEM()},
			"no certificates found in secret 'default/notation-config'"},
		{"policy not JSON", secretData([]byte("{"), pki.CAPEM()),
			"error occurred while parsing trustpolicy.json: unexpected end of JSON input"},
		{"policy without version", secretData([]byte(`{"trustPolicies":[]}`), pki.CAPEM()),
			"trust policy document has empty version"},
		{"certificate unreadable", secretData(policy, []byte("not a certificate")),
			"failed to parse certificate 'ca.crt': "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewNotation(secretName, tc.data)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}
