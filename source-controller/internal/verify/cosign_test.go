package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/source-controller/internal/verify/cosigntest"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestCosignAgreesWithCosign: artifacts signed with cosign's libraries
// in its .sig layout are verified, or refused for the right cause, and
// cosign's own verifier decides every case the same way.
func TestCosignAgreesWithCosign(t *testing.T) {
	reg := testenv.NewRegistry(t)
	trusted, other := cosigntest.NewKey(t), cosigntest.NewKey(t)
	digest := func(repo string) name.Digest {
		d, err := name.NewDigest(reg.Host() + "/" + repo + "@" + reg.Push(t, repo, "v1").String())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	signed, unsigned, byOther, tampered, forOther := digest("signed"), digest("unsigned"), digest("other"), digest("tampered"), digest("claims")
	twice := digest("twice")
	trusted.Sign(t, signed)
	other.Sign(t, byOther)
	trusted.AttachTampered(t, tampered)
	trusted.SignClaiming(t, forOther, signed) // a valid signature of another artifact, copied here
	other.Sign(t, twice)
	trusted.Sign(t, twice) // the second signature verifies

	for _, c := range []struct {
		name  string
		ref   name.Digest
		cause error // nil: verified
	}{
		{"signed", signed, nil},
		{"signed by the trusted key among others", twice, nil},
		{"unsigned", unsigned, ErrNoSignature},
		{"signed by another key", byOther, errBadSignature},
		{"payload changed after signing", tampered, errBadSignature},
		{"payload names another digest", forOther, errDigestMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := NewCosign(map[string][]byte{"cosign.pub": trusted.PublicPEM})
			if err != nil {
				t.Fatal(err)
			}
			err = v.Verify(context.Background(), c.ref)
			theirs := cosigntest.Verify(context.Background(), c.ref, trusted.PublicPEM)
			if (err == nil) != (theirs == nil) {
				t.Errorf("verifier says %v, cosign says %v", err, theirs)
			}
			if c.cause == nil {
				if err != nil {
					t.Fatalf("not verified: %v", err)
				}
				return
			}
			var nm *NoMatchError
			if !errors.As(err, &nm) || !errors.Is(err, c.cause) {
				t.Fatalf("error %v, want a NoMatchError caused by %v", err, c.cause)
			}
			if want := "no matching signatures were found for '" + c.ref.String() + "'"; err.Error() != want {
				t.Errorf("message %q, want Flux's %q", err, want)
			}
		})
	}
}

// TestCosignTrustsAnyKey: with several trusted keys, one verifying
// signature is enough; with none, nothing verifies.
func TestCosignTrustsAnyKey(t *testing.T) {
	reg := testenv.NewRegistry(t)
	k1, k2 := cosigntest.NewKey(t), cosigntest.NewKey(t)
	ref, err := name.NewDigest(reg.Host() + "/app@" + reg.Push(t, "app", "v1").String())
	if err != nil {
		t.Fatal(err)
	}
	k2.Sign(t, ref)
	v, err := NewCosign(map[string][]byte{"a.pub": k1.PublicPEM, "b.pub": k2.PublicPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(context.Background(), ref); err != nil {
		t.Errorf("two keys, one matching: %v", err)
	}
	none, err := NewCosign(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := none.Verify(context.Background(), ref); !errors.Is(err, errBadSignature) {
		t.Errorf("no keys: %v, want a refusal", err)
	}
}

// TestCosignKeyErrors: a key that is not a PEM public key is named, its
// content never quoted.
func TestCosignKeyErrors(t *testing.T) {
	for _, data := range [][]byte{[]byte("s3cr3t not a key"), {}} {
		_, err := NewCosign(map[string][]byte{"bad.pub": data})
		if err == nil || !strings.Contains(err.Error(), "'bad.pub'") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("key %q: error %v", data, err)
		}
	}
}

// TestCosignRegistryErrors: a registry that fails is reported as such,
// not as a missing or wrong signature; credentials reach the registry.
func TestCosignRegistryErrors(t *testing.T) {
	reg := testenv.NewRegistry(t, testenv.WithBasicAuth("u", "p"))
	auth := remote.WithAuth(&authn.Basic{Username: "u", Password: "p"})
	k := cosigntest.NewKey(t)
	ref, err := name.NewDigest(reg.Host() + "/app@" + reg.Push(t, "app", "v1").String())
	if err != nil {
		t.Fatal(err)
	}
	k.Sign(t, ref, auth)
	anonymous, _ := NewCosign(map[string][]byte{"k.pub": k.PublicPEM})
	if err := anonymous.Verify(context.Background(), ref); err == nil || errors.Is(err, ErrNoSignature) {
		t.Errorf("without credentials: %v, want a registry error", err)
	}
	withAuth, _ := NewCosign(map[string][]byte{"k.pub": k.PublicPEM}, auth)
	if err := withAuth.Verify(context.Background(), ref); err != nil {
		t.Errorf("with credentials: %v", err)
	}
	reg.FailWith(500)
	if err := withAuth.Verify(context.Background(), ref); err == nil || errors.Is(err, ErrNoSignature) {
		t.Errorf("registry failing: %v, want a registry error", err)
	}
}
