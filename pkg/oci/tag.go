package oci

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
)

// Tag gives the artifact ref (registry/repository:tag or @digest) the tag
// tag in the same repository, and returns the new reference,
// registry/repository:tag. Flux compatible (fluxcd/pkg/oci Tag).
func (c *Client) Tag(ctx context.Context, ref, tag string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %w", err)
	}
	dst, err := name.NewTag(r.Context().Name() + ":" + tag)
	if err != nil {
		return "", fmt.Errorf("invalid tag %q: %w", tag, err)
	}
	if err := crane.Tag(ref, tag, c.with(ctx)...); err != nil {
		return "", registryError(ref, err)
	}
	return dst.Name(), nil
}
