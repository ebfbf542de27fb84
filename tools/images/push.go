package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push pushes every component of the layout at dir to
// <registry>/<component>:<version> (registry: a host with an optional
// path, e.g. ghcr.io/acme or localhost:5000/eddy; plain HTTP only for a
// local or private address, as the library decides) and prints one
// "<registry>/<component>:<version>@sha256:<hex>" line per component on
// out. Credentials come from opts (make push-images: the Docker config's,
// ~/.docker/config.json, as `docker login` or `crane auth login` writes them).
func Push(ctx context.Context, dir, registry string, out io.Writer, opts ...remote.Option) error {
	registry = strings.TrimSuffix(registry, "/")
	if registry == "" {
		return fmt.Errorf("no registry: give one, e.g. make push-images REGISTRY=ghcr.io/acme")
	}
	comps, err := ReadLayout(dir)
	if err != nil {
		return err
	}
	opts = append(opts, remote.WithContext(ctx))
	for _, c := range comps {
		ref, err := name.NewTag(registry + "/" + c.Component + ":" + c.Version)
		if err != nil {
			return fmt.Errorf("registry %q: %w", registry, err)
		}
		if err := remote.WriteIndex(ref, c.Index, opts...); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		d, err := c.Index.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s@%s\n", ref, d)
	}
	return nil
}
