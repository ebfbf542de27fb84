package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
)

// ErrDiffers is Diff's error when the contents differ. Its text is Flux's.
var ErrDiffers = errors.New("the remote artifact contents differs from the local one")

// Diff builds path as Push would (Build with ignorePaths) and compares it
// with the first layer of the artifact ref: nil when digest and size are
// equal, ErrDiffers when not, another error when either cannot be read.
// Only the manifest is downloaded. Flux compatible (fluxcd/pkg/oci Diff).
func (c *Client) Diff(ctx context.Context, ref, path string, ignorePaths []string) error {
	if _, err := name.ParseReference(ref); err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	h := sha256.New()
	n := &counter{w: h}
	if err := writeContent(n, path, ignorePaths, ""); err != nil {
		return fmt.Errorf("building artifact failed: %w", err)
	}
	img, err := crane.Pull(ref, c.with(ctx)...)
	if err != nil {
		return registryError(ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return registryError(ref, err)
	}
	if len(m.Layers) < 1 {
		return fmt.Errorf("no layers found in artifact %s", ref)
	}
	l := m.Layers[0]
	if l.Digest.Hex != hex.EncodeToString(h.Sum(nil)) || l.Size != n.n {
		return ErrDiffers
	}
	return nil
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
