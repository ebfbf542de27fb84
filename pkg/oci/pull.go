package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrNoContentLayer is wrapped by Pull's error when the manifest has no
// layer of the wanted media type.
var ErrNoContentLayer = errors.New("no layer of the content media type")

// PullOptions are the optional parts of a pull.
type PullOptions struct {
	// LayerMediaType is the media type of the layer to extract, the first
	// such layer; empty: ContentMediaType.
	LayerMediaType types.MediaType
	// Limits bound what is extracted; zero: artifact.DefaultLimits.
	Limits artifact.Limits
}

// Pull downloads the artifact ref (registry/repository:tag or @digest) and
// extracts its content layer into dir, which must exist. The layer is
// downloaded whole (its digest verified) and checked before the first file
// is written: an entry with an absolute name, one that leaves dir (`../`), a
// link or special file, or content past the limits fails the pull with an
// error wrapping artifact.ErrUnsafeArchive and dir untouched. Files already
// in dir are overwritten, others left. Flux's `flux pull artifact` skips
// links instead; Eddy refuses the artifact.
//
// It returns the manifest's Metadata with URL ref and Digest
// registry/repository@sha256:<hex>.
func (c *Client) Pull(ctx context.Context, ref, dir string, o PullOptions) (*Metadata, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	mt := o.LayerMediaType
	if mt == "" {
		mt = ContentMediaType
	}
	lim := o.Limits
	if lim == (artifact.Limits{}) {
		lim = artifact.DefaultLimits
	}
	img, err := crane.Pull(ref, c.with(ctx)...)
	if err != nil {
		return nil, registryError(ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, registryError(ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, registryError(ref, err)
	}
	meta := MetadataFromAnnotations(manifest.Annotations)
	meta.URL = ref
	meta.Digest = r.Context().Digest(digest.String()).String()

	var layer v1.Layer
	for _, l := range manifest.Layers {
		if l.MediaType == mt {
			if layer, err = img.LayerByDigest(l.Digest); err != nil {
				return nil, registryError(ref, err)
			}
			break
		}
	}
	if layer == nil {
		return nil, fmt.Errorf("artifact %s: %w %s", ref, ErrNoContentLayer, mt)
	}
	if size, err := layer.Size(); err == nil && size > lim.MaxBytes {
		return nil, fmt.Errorf("artifact %s: %w: layer of %d bytes, more than %d", ref, artifact.ErrUnsafeArchive, size, lim.MaxBytes)
	}

	tmp, err := os.CreateTemp("", "eddy-oci-pull-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	blob, err := layer.Compressed()
	if err != nil {
		return nil, registryError(ref, err)
	}
	_, err = io.Copy(tmp, io.LimitReader(blob, lim.MaxBytes+1))
	if cerr := blob.Close(); err == nil {
		err = cerr // the digest is verified at the end of the stream
	}
	if err != nil {
		return nil, registryError(ref, err)
	}
	// A first pass reads everything and writes nothing: a bad entry anywhere
	// fails the pull before dir changes.
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	err = artifact.ReadArchive(tmp, lim, func(e artifact.Entry) error {
		if e.Content != nil {
			_, err := io.Copy(io.Discard, e.Content)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", ref, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := artifact.Extract(tmp, dir, lim); err != nil {
		return nil, fmt.Errorf("extracting artifact %s: %w", ref, pathless(err))
	}
	return meta, nil
}

// registryError names ref in a registry error, saying plainly what a 401,
// 403 or 404 means; the registry's own words follow. go-containerregistry's
// messages carry the request URL and never the credentials.
func registryError(ref string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("unauthorized to access %s (missing or wrong credentials): %w", ref, err)
		case http.StatusForbidden:
			return fmt.Errorf("access to %s denied: %w", ref, err)
		case http.StatusNotFound:
			return fmt.Errorf("artifact %s not found: %w", ref, err)
		}
	}
	return fmt.Errorf("artifact %s: %w", ref, err)
}
