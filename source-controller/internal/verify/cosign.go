package verify

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Cosign's signature layout (its "v2" layout, which cosign v3 still writes
// with --new-bundle-format=false): the signatures of the artifact at
// sha256:<hex> are the layers of the manifest tagged sha256-<hex>.sig in
// the same repository, each a simple-signing JSON payload whose signature
// is the layer's SignatureAnnotation.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation    = "dev.cosignproject.cosign/signature"
	SignatureTagSuffix     = ".sig"
)

// Bounds on what one verification reads: a signature manifest gains a
// layer per `cosign sign`, a payload is a few hundred bytes.
const (
	maxSignatureLayers = 1000
	maxPayloadBytes    = 1 << 20
)

// errDigestMismatch and errBadSignature are the causes a
// signature layer is rejected for; tests tell the cases apart with them.
var (
	errDigestMismatch = errors.New("the payload names another digest")
	errBadSignature   = errors.New("no trusted key verifies the signature")
)

// Cosign verifies cosign's key-based signatures: an artifact is verified
// when any of its signatures is verified by any of the trusted public keys
// and its payload names the artifact's digest. It reads the registry only
// (no transparency log), as Flux does with a public key.
type Cosign struct {
	keys []signature.Verifier
	opts []remote.Option
}

// NewCosign returns a Cosign that trusts the PEM public keys of keys (by
// name, e.g. the Secret's keys ending in `.pub`) and reads the registry
// with opts (credentials, transport). An empty keys trusts nothing; a key
// that is not a PEM public key is an error naming it.
func NewCosign(keys map[string][]byte, opts ...remote.Option) (*Cosign, error) {
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	c := &Cosign{opts: opts}
	for _, n := range names {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(keys[n])
		if err != nil {
			return nil, fmt.Errorf("key '%s' is not a PEM public key", n)
		}
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("key '%s': %w", n, err)
		}
		c.keys = append(c.keys, v)
	}
	return c, nil
}

// NoMatchError is the error of a verification that found no trusted
// signature; its message is Flux's, and it unwraps to the cause
// (ErrNoSignature when the registry holds none).
type NoMatchError struct {
	Ref   string
	Cause error
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("no matching signatures were found for '%s'", e.Ref)
}

func (e *NoMatchError) Unwrap() error { return e.Cause }

// Verify implements Verifier. A registry failure other than a missing
// signature manifest is returned as such, not as a failed verification.
func (c *Cosign) Verify(ctx context.Context, ref name.Digest) error {
	h, err := gcrv1.NewHash(ref.DigestStr())
	if err != nil {
		return fmt.Errorf("invalid digest '%s': %w", ref.DigestStr(), err)
	}
	tag := ref.Context().Tag(h.Algorithm + "-" + h.Hex + SignatureTagSuffix)
	opts := append(append([]remote.Option{}, c.opts...), remote.WithContext(ctx))
	img, err := remote.Image(tag, opts...)
	if err != nil {
		if isNotFound(err) {
			return &NoMatchError{Ref: ref.String(), Cause: ErrNoSignature}
		}
		return fmt.Errorf("failed to fetch the signatures of '%s': %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("failed to read the signatures of '%s': %w", ref, err)
	}
	cause := ErrNoSignature
	for i, l := range m.Layers {
		if i == maxSignatureLayers {
			break
		}
		sig, ok := l.Annotations[SignatureAnnotation]
		if !ok || l.MediaType != SimpleSigningMediaType {
			continue
		}
		err := c.verifyLayer(img, l, sig, h)
		if err == nil {
			return nil
		}
		var rerr *readError
		if errors.As(err, &rerr) {
			return fmt.Errorf("failed to read a signature of '%s': %w", ref, rerr.err)
		}
		cause = err
	}
	return &NoMatchError{Ref: ref.String(), Cause: cause}
}

// readError is a registry failure while reading a signature layer.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// verifyLayer checks one signature layer: its base64 signature sig over
// the payload, by one of the keys, then that the payload names digest.
func (c *Cosign) verifyLayer(img gcrv1.Image, l gcrv1.Descriptor, sig string, digest gcrv1.Hash) error {
	if l.Size > maxPayloadBytes {
		return fmt.Errorf("signature payload of %d bytes is over the limit", l.Size)
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return errBadSignature
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return &readError{err}
	}
	rc, err := layer.Compressed() // verified against l.Digest at EOF
	if err != nil {
		return &readError{err}
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxPayloadBytes+1))
	if err != nil {
		return &readError{err}
	}
	if len(body) > maxPayloadBytes {
		return fmt.Errorf("signature payload is over the limit of %d bytes", maxPayloadBytes)
	}
	if !c.verifiedByAnyKey(raw, body) {
		return errBadSignature
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(body, &p); err != nil || p.Critical.Image.DockerManifestDigest != digest.String() {
		return errDigestMismatch
	}
	return nil
}

func (c *Cosign) verifiedByAnyKey(sig, body []byte) bool {
	for _, k := range c.keys {
		if k.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)) == nil {
			return true
		}
	}
	return false
}

// isNotFound reports whether err is the registry saying the signature
// manifest does not exist.
func isNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}
