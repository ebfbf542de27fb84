package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// refNameAnnotation names an image of an OCI image layout (image-spec annotations.md).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Addr is the address to listen on. Default "127.0.0.1:0": a free
	// loopback port, which is enough for a node on this machine (containerd
	// pulls from the host's network namespace, and speaks plain HTTP to a
	// loopback or "localhost" registry without configuration). An address
	// pods can reach, such as the node bridge's, serves them as well.
	Addr string
	// Dir, when set, keeps the blobs on disk there, created if missing
	// (the caller owns and removes it); by default they are kept in memory,
	// which for bin/images is its size (176 MB for linux/amd64 alone). Manifests are always
	// kept in memory: a registry starts empty.
	Dir string
	// Log receives the registry's request log; default: discarded.
	Log io.Writer
}

// Registry is a local OCI distribution registry (go-containerregistry's
// pkg/registry) serving the node's images: Eddy's controllers (make images,
// bin/images), the pause image and the tiny application (make node-images,
// bin/node-images), pushed with PushLayout. No authentication, plain HTTP.
type Registry struct {
	host string
	srv  *http.Server
	done chan struct{}
}

// StartRegistry starts a registry on opts.Addr and returns once it accepts
// connections. Stop it with Stop.
func StartRegistry(opts RegistryOptions) (*Registry, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	ropts := []ggcrregistry.Option{ggcrregistry.Logger(log.New(logw, "registry: ", log.LstdFlags))}
	if opts.Dir != "" {
		// The library writes uploads into it and does not create it.
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("local registry: %w", err)
		}
		ropts = append(ropts, ggcrregistry.WithBlobHandler(ggcrregistry.NewDiskBlobHandler(opts.Dir)))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("local registry: %w", err)
	}
	r := &Registry{
		host: l.Addr().String(),
		srv:  &http.Server{Handler: ggcrregistry.New(ropts...), ReadHeaderTimeout: 30 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		r.srv.Serve(l)
	}()
	return r, nil
}

// Host is the registry's host:port as image references name it, e.g.
// 127.0.0.1:41234.
func (r *Registry) Host() string { return r.host }

// Stop closes the listener and every connection and returns once the
// server has stopped. It may be called more than once.
func (r *Registry) Stop() {
	r.srv.Close()
	<-r.done
}

// PushedImage is one image PushLayout pushed.
type PushedImage struct {
	// Source is the image's name in the layout (its
	// org.opencontainers.image.ref.name), e.g.
	// ghcr.io/eddyops/source-controller:v0.1.0.
	Source string
	// Name is its repository in the registry: the last element of Source's
	// repository, e.g. source-controller, so that `eddy install --registry
	// <Host>` names the same images.
	Name string
	// Tag is Source's tag, pushed as well.
	Tag string
	// Digest is the digest of the pushed index or manifest: the layout's,
	// unchanged by the push.
	Digest v1.Hash
	// Ref is <Host>/<Name>@<Digest>, what a pod spec or containerd's
	// sandbox image names it by.
	Ref string
}

// TagRef is <Host>/<Name>:<Tag>.
func (p PushedImage) TagRef() string {
	repo, _, _ := strings.Cut(p.Ref, "@")
	return repo + ":" + p.Tag
}

// PushLayout pushes every image of the OCI image layout at dir (each entry
// of its index.json, an image index or a single image, named by its
// org.opencontainers.image.ref.name annotation as make images and make
// node-images write them) to the registry as <Host>/<last path element of
// its repository>:<tag>, and returns them in index.json's order. An entry
// without a <repository>:<tag> name is an error: nothing would name it.
func (r *Registry) PushLayout(ctx context.Context, dir string) ([]PushedImage, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("no OCI image layout at %s (make images, make node-images): %w", dir, err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) == 0 {
		return nil, fmt.Errorf("the OCI image layout at %s holds no image", dir)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	var out []PushedImage
	for _, d := range im.Manifests {
		src := d.Annotations[refNameAnnotation]
		tag, err := name.NewTag(src, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %s is not named <repository>:<tag> (ref.name %q)", dir, d.Digest, src)
		}
		repo := path.Base(tag.RepositoryStr())
		dst, err := name.NewTag(r.host + "/" + repo + ":" + tag.TagStr())
		if err != nil {
			return nil, err
		}
		if err := push(root, d, dst, opts); err != nil {
			return nil, fmt.Errorf("push %s to %s: %w", src, dst, err)
		}
		out = append(out, PushedImage{Source: src, Name: repo, Tag: tag.TagStr(), Digest: d.Digest,
			Ref: r.host + "/" + repo + "@" + d.Digest.String()})
	}
	return out, nil
}

// push pushes the entry d of root to dst.
func push(root v1.ImageIndex, d v1.Descriptor, dst name.Tag, opts []remote.Option) error {
	switch {
	case d.MediaType.IsIndex():
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			return err
		}
		return remote.WriteIndex(dst, idx, opts...)
	case d.MediaType.IsImage():
		img, err := root.Image(d.Digest)
		if err != nil {
			return err
		}
		return remote.Write(dst, img, opts...)
	default:
		return errors.New("neither an image index nor an image manifest: " + string(d.MediaType))
	}
}
