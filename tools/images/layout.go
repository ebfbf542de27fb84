package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	specs "github.com/opencontainers/image-spec/specs-go/v1"
)

// DigestsFile is the file beside index.json in the layout naming each
// component's index digest, one "<component>=sha256:<hex>" line per
// component in name order: what the install bundle pins the images with
// (<registry>/<component>:<version>@<digest>, whatever the registry, since
// pushing does not change a digest).
const DigestsFile = "digests"

// Component is one controller's multi-platform index.
type Component struct {
	Name  string
	Index v1.ImageIndex
	// Tag is the image's tag when it is not the build's version (the
	// pause image's is pause's own version).
	Tag string
}

// WriteLayout writes comps as one OCI image layout at dir: index.json lists
// each component's index, in the order given, annotated
// org.opencontainers.image.ref.name = <registry>/<name>:<version> (or
// :<tag> when the component has its own), with the
// DigestsFile beside it. The layout is written to a sibling directory first
// and then replaces dir, so a failure leaves dir as it was. It returns the
// digests by component.
func WriteLayout(dir, registry, version string, comps []Component) (map[string]v1.Hash, error) {
	registry = strings.TrimSuffix(registry, "/")
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return nil, err
	}
	digests := map[string]v1.Hash{}
	var lines []string
	for _, c := range comps {
		tag := version
		if c.Tag != "" {
			tag = c.Tag
		}
		ref, err := name.NewTag(registry + "/" + c.Name + ":" + tag)
		if err != nil {
			return nil, fmt.Errorf("image name %s/%s:%s: %w", registry, c.Name, tag, err)
		}
		if err := p.AppendIndex(c.Index, layout.WithAnnotations(map[string]string{specs.AnnotationRefName: ref.String()})); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		d, err := c.Index.Digest()
		if err != nil {
			return nil, err
		}
		digests[c.Name] = d
		lines = append(lines, c.Name+"="+d.String())
	}
	sort.Strings(lines)
	if err := os.WriteFile(filepath.Join(tmp, DigestsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return digests, nil
}

// Named is a component's index read back from a layout, with the
// component name and version of its ref.name annotation.
type Named struct {
	Component, Version string
	Index              v1.ImageIndex
}

// ReadLayout reads the components WriteLayout wrote at dir, in index.json's order.
func ReadLayout(dir string) ([]Named, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("no OCI image layout at %s: run make images first", dir)
	}
	root, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []Named
	for _, d := range im.Manifests {
		ref, err := name.NewTag(d.Annotations[specs.AnnotationRefName])
		if err != nil {
			return nil, fmt.Errorf("%s: index entry %s has no <registry>/<component>:<version> ref.name annotation: rebuild it with make images", dir, d.Digest)
		}
		ii, err := root.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		out = append(out, Named{Component: path.Base(ref.RepositoryStr()), Version: ref.TagStr(), Index: ii})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the OCI image layout at %s holds no image: run make images", dir)
	}
	return out, nil
}
