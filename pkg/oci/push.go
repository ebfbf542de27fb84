package oci

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ReproducibleCreated is the creation time `--reproducible` sets, so that
// the same content pushed twice has the same digest. Flux compatible (its
// help text's '1970-01-01T00:00:00Z'; Eddy writes it in UTC whatever the
// local time zone).
var ReproducibleCreated = time.Unix(0, 0).UTC().Format(time.RFC3339)

// PushOptions are the optional parts of a push.
type PushOptions struct {
	// Metadata gives the source, revision, creation time (RFC 3339; empty:
	// now, UTC) and extra annotations of the manifest.
	Metadata Metadata
	// IgnorePaths exclude entries from the content (see Build); nil keeps all.
	IgnorePaths []string
}

// Push builds the content of path (a directory or a single file, as Build)
// and pushes it to ref (registry/repository:tag) as a Flux artifact: an OCI
// image manifest (application/vnd.oci.image.manifest.v1+json) with a
// ConfigMediaType config, one ContentMediaType layer (Build's bytes), and
// the annotations of o.Metadata. It returns the digest URL,
// registry/repository@sha256:<hex>. Flux compatible: the manifest and config
// are made with the same go-containerregistry calls as fluxcd/pkg/oci's Push
// (tarball layer type), so the same content, metadata and creation time give
// the same digest as `flux push artifact`.
func (c *Client) Push(ctx context.Context, ref, path string, o PushOptions) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %w", err)
	}
	created := o.Metadata.Created
	if created == "" {
		created = time.Now().UTC().Format(time.RFC3339)
	}
	annotations := o.Metadata.ToAnnotations()
	if annotations[CreatedAnnotation] == "" {
		annotations[CreatedAnnotation] = created
	}
	createdTime, err := time.Parse(time.RFC3339, annotations[CreatedAnnotation])
	if err != nil {
		return "", fmt.Errorf("invalid created timestamp %q: %w", annotations[CreatedAnnotation], err)
	}

	dir, err := os.MkdirTemp("", "eddy-oci-push-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	tgz := filepath.Join(dir, "artifact.tgz")
	if err := Build(tgz, path, o.IgnorePaths); err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromFile(tgz, tarball.WithMediaType(ContentMediaType), tarball.WithCompressedCaching)
	if err != nil {
		return "", fmt.Errorf("reading artifact content: %w", pathless(err))
	}

	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), ConfigMediaType)
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg.Created = v1.Time{Time: createdTime}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", err
	}
	img = mutate.Annotations(img, annotations).(v1.Image)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer}); err != nil {
		return "", err
	}
	if err := crane.Push(img, ref, c.with(ctx)...); err != nil {
		return "", registryError(ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Digest(digest.String()).String(), nil
}
