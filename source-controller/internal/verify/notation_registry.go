package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/notaryproject/notation-go/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Size limits of what a registry may hand the verifier, notation-go's own.
const (
	maxSignatureManifestSize = 4 << 20
	maxSignatureBlobSize     = 32 << 20
)

// notationRepository reads notation signatures through go-containerregistry,
// so that verification reuses the remote options (credentials, TLS, proxy)
// the controller pulls with. Signatures are the referrers of the artifact
// of artifactType application/vnd.cncf.notary.signature, listed by the
// referrers API or, where the registry lacks it, the referrers tag schema
// (sha256-<hex>). It is read-only and serves one verification.
type notationRepository struct {
	repo name.Repository
	opts []remote.Option
	// listed is set once the registry answered the signature listing;
	// signatures counts what it listed.
	listed     bool
	signatures int
}

var _ registry.Repository = (*notationRepository)(nil)

func (r *notationRepository) options(ctx context.Context) []remote.Option {
	return append(append([]remote.Option{}, r.opts...), remote.WithContext(ctx))
}

// Resolve implements registry.Repository: reference is a digest or a tag.
func (r *notationRepository) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	var ref name.Reference = r.repo.Tag(reference)
	if strings.Contains(reference, ":") {
		ref = r.repo.Digest(reference)
	}
	desc, err := remote.Head(ref, r.options(ctx)...)
	if err != nil {
		// Some registries answer no HEAD; GET is what pulls use anyway.
		got, gerr := remote.Get(ref, r.options(ctx)...)
		if gerr != nil {
			return ocispec.Descriptor{}, gerr
		}
		desc = &got.Descriptor
	}
	return toOCIDescriptor(*desc), nil
}

// ListSignatures implements registry.Repository.
func (r *notationRepository) ListSignatures(ctx context.Context, desc ocispec.Descriptor, fn func([]ocispec.Descriptor) error) error {
	opts := append(r.options(ctx), remote.WithFilter("artifactType", registry.ArtifactTypeNotation))
	idx, err := remote.Referrers(r.repo.Digest(desc.Digest.String()), opts...)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	r.listed = true
	var sigs []ocispec.Descriptor
	for _, d := range m.Manifests {
		// The tag schema's index is filtered here too; check again all the same.
		if d.ArtifactType == registry.ArtifactTypeNotation {
			sigs = append(sigs, toOCIDescriptor(d))
		}
	}
	r.signatures += len(sigs)
	if len(sigs) == 0 {
		return nil
	}
	return fn(sigs)
}

// FetchSignatureBlob implements registry.Repository: it reads the
// signature manifest desc, which must hold exactly one layer, the
// envelope, and returns that layer's bytes and descriptor. Both are
// checked against their digests and sizes.
func (r *notationRepository) FetchSignatureBlob(ctx context.Context, desc ocispec.Descriptor) ([]byte, ocispec.Descriptor, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, ocispec.Descriptor{}, fmt.Errorf("sigManifestDesc.MediaType requires %q, got %q", ocispec.MediaTypeImageManifest, desc.MediaType)
	}
	if desc.Size > maxSignatureManifestSize {
		return nil, ocispec.Descriptor{}, fmt.Errorf("signature manifest too large: %d bytes", desc.Size)
	}
	got, err := remote.Get(r.repo.Digest(desc.Digest.String()), r.options(ctx)...)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(got.Manifest, &m); err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("invalid signature manifest: %w", err)
	}
	if len(m.Layers) != 1 {
		return nil, ocispec.Descriptor{}, fmt.Errorf("signature manifest requires exactly one signature envelope blob, got %d", len(m.Layers))
	}
	blobDesc := m.Layers[0]
	if blobDesc.Size > maxSignatureBlobSize {
		return nil, ocispec.Descriptor{}, fmt.Errorf("signature blob too large: %d bytes", blobDesc.Size)
	}
	blob, err := r.fetchBlob(ctx, blobDesc)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	return blob, blobDesc, nil
}

func (r *notationRepository) fetchBlob(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("invalid signature blob digest: %w", err)
	}
	l, err := remote.Layer(r.repo.Digest(desc.Digest.String()), r.options(ctx)...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	blob, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(blob)) != desc.Size || digest.FromBytes(blob) != desc.Digest {
		return nil, errors.New("signature blob does not match its descriptor")
	}
	return blob, nil
}

// PushSignature implements registry.Repository; verification never pushes.
func (r *notationRepository) PushSignature(context.Context, string, []byte, ocispec.Descriptor, map[string]string) (ocispec.Descriptor, ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, ocispec.Descriptor{}, errors.New("pushing signatures is not supported")
}

func toOCIDescriptor(d gcrv1.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType:    string(d.MediaType),
		Digest:       digest.Digest(d.Digest.String()),
		Size:         d.Size,
		Annotations:  d.Annotations,
		ArtifactType: d.ArtifactType,
	}
}
