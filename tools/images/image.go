package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The non-root user and group every image runs as: nobody, 65534, as
// Flux's images run.
const (
	nobodyUID = 65534
	user      = "65534:65534"
)

// caBundlePath is where the base layer puts the CA bundle: the path Go's
// crypto/x509 reads first on Linux, and Debian's.
const caBundlePath = "etc/ssl/certs/ca-certificates.crt"

// Binary is one static controller binary and the platform it is built for.
type Binary struct {
	OS, Arch string // GOOS and GOARCH, e.g. "linux", "arm64"
	Path     string
	// Helpers are more static binaries of the platform that the
	// controller runs, each put beside it as /<file name>.
	Helpers []string
}

// Helpers are the helper binaries of each component, found beside its
// binary (kustomize-controller's SOPS helper: it looks for it beside its
// own executable).
var Helpers = map[string][]string{
	"kustomize-controller": {"eddy-sops"},
}

// Meta is what every image of one build shares: the OCI labels
// (org.opencontainers.image.version, revision, source), the creation time
// written into configs, histories and tar headers (SOURCE_DATE_EPOCH, so
// the same source gives the same digests), and the CA bundle (PEM).
type Meta struct {
	Version, Revision, Source string
	Created                   time.Time
	CABundle                  []byte
}

// Index builds the multi-platform OCI image index of component name (e.g.
// "source-controller"): one OCI image per binary, each two layers (the base
// layer: CA bundle, /etc/passwd and /etc/group with nobody 65534, /tmp; then
// the binary as /<name> and its helpers beside it), entrypoint /<name>, user 65534:65534, and the OCI
// labels of m. It refuses a binary that is not a static ELF executable for
// its platform (build it with CGO_ENABLED=0 and the platform's GOOS/GOARCH).
// The result depends only on its inputs: no clock, no file system metadata.
func Index(name string, bins []Binary, m Meta) (v1.ImageIndex, error) {
	if len(bins) == 0 {
		return nil, fmt.Errorf("%s: no binary given", name)
	}
	base, err := baseLayer(m)
	if err != nil {
		return nil, err
	}
	var adds []mutate.IndexAddendum
	for _, b := range bins {
		img, err := image(name, b, base, m)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: b.OS, Architecture: b.Arch}},
		})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, labels(name, m)).(v1.ImageIndex), nil
}

// labels are the OCI annotation keys (image-spec annotations.md) the image
// configs carry as labels and the index as annotations; empty values are left out.
func labels(name string, m Meta) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    name,
		"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.source":   m.Source,
	}
	for k, v := range l {
		if v == "" {
			delete(l, k)
		}
	}
	return l
}

func image(name string, b Binary, base v1.Layer, m Meta) (v1.Image, error) {
	var entries []entry
	createdBy := "eddy images:"
	for i, p := range append([]string{b.Path}, b.Helpers...) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s for %s/%s: %w (build it first: make images)", name, b.OS, b.Arch, err)
		}
		if err := checkStatic(data, b); err != nil {
			return nil, fmt.Errorf("%s for %s/%s: %s: %w", name, b.OS, b.Arch, filepath.Base(p), err)
		}
		n := name
		if i > 0 {
			n = filepath.Base(p)
		}
		entries = append(entries, entry{name: n, mode: 0o755, data: data})
		createdBy += " /" + n
	}
	bin, err := layer(entries, m.Created)
	if err != nil {
		return nil, err
	}
	return assemble(b.OS, b.Arch, m.Created, v1.Config{
		Entrypoint: []string{"/" + name},
		User:       user,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels:     labels(name, m),
	}, []layerOf{{base, baseHistory}, {bin, createdBy}})
}

// baseHistory is the history line of the base layer.
const baseHistory = "eddy images: CA certificates, nobody (65534), /tmp"

// layerOf is one layer of an image and its history line.
type layerOf struct {
	layer     v1.Layer
	createdBy string
}

// assemble is the OCI image of layers for goos/arch with config cfg,
// created (config and history) at t.
func assemble(goos, arch string, t time.Time, cfg v1.Config, layers []layerOf) (v1.Image, error) {
	created := v1.Time{Time: t}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	var adds []mutate.Addendum
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{Layer: l.layer, MediaType: types.OCILayer,
			History: v1.History{Created: created, CreatedBy: l.createdBy}})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = goos, arch
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// elfMachine is the ELF machine of each GOARCH an image is built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkStatic refuses what would not start in a scratch image on b's
// platform: not an ELF executable, another architecture, or a dynamic
// loader (PT_INTERP: cgo was on).
func checkStatic(data []byte, b Binary) error {
	want, ok := elfMachine[b.Arch]
	if b.OS != "linux" || !ok {
		return fmt.Errorf("unsupported platform: images are built for linux/amd64 and linux/arm64")
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: build it with GOOS=linux GOARCH=%s", b.Arch)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %s, not %s: build it with GOARCH=%s", f.Machine, want, b.Arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked, which a scratch image cannot run: build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// baseLayer is the scratch base every image shares (the same bytes, so the
// same blob, for every component and platform).
func baseLayer(m Meta) (v1.Layer, error) {
	if err := checkCABundle(m.CABundle); err != nil {
		return nil, err
	}
	return layer([]entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnobody:x:%d:\n", nobodyUID))},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnobody:x:%d:%d:nobody:/nonexistent:/sbin/nologin\n", nobodyUID, nobodyUID))},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caBundlePath, mode: 0o644, data: m.CABundle},
		// Go's os.TempDir: the controllers' Git checkouts and builds.
		{name: "tmp/", mode: 0o1777},
	}, m.Created)
}

// checkCABundle accepts a PEM bundle holding at least one certificate.
func checkCABundle(b []byte) error {
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return fmt.Errorf("the CA bundle holds no PEM certificate: give the ca-certificates bundle (/etc/ssl/certs/ca-certificates.crt on Debian)")
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err == nil {
			return nil
		}
	}
}

// entry is one file (data), directory (name ending in "/") or symbolic
// link (link set) of a layer.
type entry struct {
	name string
	mode int64
	data []byte
	link string
}

// layer is a gzip-compressed tar of entries in name order, every header
// owned by root with modification time t and nothing else of the host's,
// compressed once in memory (the library takes the compressed bytes as
// they are, so they are read, not recompressed, for digests and writes).
func layer(entries []entry, t time.Time) (v1.Layer, error) {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: t, Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
		switch {
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	blob := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
