// Package oci reads and writes Flux's OCI artifacts: the format `flux push
// artifact` makes (fluxcd/pkg/oci v0.68.1) and OCIRepository pulls. An
// artifact is an OCI image manifest whose config has the media type
// ConfigMediaType and whose one layer, of media type ContentMediaType, is a
// tar.gz of the pushed directory (see Build); the manifest's annotations
// carry the source address, its revision and the time of the push.
//
// References are written without scheme (registry/repository:tag or
// @sha256:…) in the Client's methods; ParseArtifactURL and
// ParseRepositoryURL take the oci:// form the CLI and OCIRepository use.
package oci

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of a Flux artifact. Flux compatible (fluxcd/pkg/oci globals).
const (
	// ConfigMediaType is the media type of the manifest's config blob.
	ConfigMediaType types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	// ContentMediaTypePrefix starts the media type of every Flux content layer.
	ContentMediaTypePrefix types.MediaType = "application/vnd.cncf.flux.content.v1"
	// ContentMediaType is the media type of the tar.gz content layer.
	ContentMediaType types.MediaType = ContentMediaTypePrefix + ".tar+gzip"
)

// Manifest annotations of a Flux artifact (OpenContainers pre-defined keys).
// Flux compatible (fluxcd/pkg/oci constants).
const (
	// SourceAnnotation holds the address of the artifact's source, e.g. a Git URL.
	SourceAnnotation = "org.opencontainers.image.source"
	// RevisionAnnotation holds the source's revision, e.g. main@sha1:<hex>.
	RevisionAnnotation = "org.opencontainers.image.revision"
	// CreatedAnnotation holds the time of the build, RFC 3339.
	CreatedAnnotation = "org.opencontainers.image.created"
)

// URLPrefix is the scheme prefix of artifact URLs on the command line and in
// OCIRepository's spec.url.
const URLPrefix = "oci://"

// UserAgent is sent with every registry request.
const UserAgent = "eddy"

// Metadata describes a pushed artifact: its annotations, and where it is.
// The JSON names are Flux's (fluxcd/pkg/oci Metadata).
type Metadata struct {
	// Created is the RFC 3339 time of the push (CreatedAnnotation).
	Created string `json:"created,omitempty"`
	// Source is SourceAnnotation's value.
	Source string `json:"source_url,omitempty"`
	// Revision is RevisionAnnotation's value.
	Revision string `json:"source_revision,omitempty"`
	// Digest is the manifest's digest: repository@sha256:<hex> after Pull,
	// sha256:<hex> in List.
	Digest string `json:"digest"`
	// URL is the reference the artifact was read by (repository:tag for List).
	URL string `json:"url"`
	// Annotations are all the manifest's annotations (Pull), or the extra
	// ones to write (Push).
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ToAnnotations returns the manifest annotations of m: Created, Source and
// Revision under their keys (present even when empty, as Flux writes
// them), then m.Annotations, which win.
func (m *Metadata) ToAnnotations() map[string]string {
	a := map[string]string{CreatedAnnotation: m.Created, SourceAnnotation: m.Source, RevisionAnnotation: m.Revision}
	for k, v := range m.Annotations {
		a[k] = v
	}
	return a
}

// MetadataFromAnnotations reads a manifest's annotations; Digest and URL
// are left empty.
func MetadataFromAnnotations(a map[string]string) *Metadata {
	return &Metadata{Created: a[CreatedAnnotation], Source: a[SourceAnnotation], Revision: a[RevisionAnnotation], Annotations: a}
}

// errURLFormat is Flux's message for a URL without the oci:// scheme.
var errURLFormat = errors.New("URL must be in format 'oci://<domain>/<org>/<repo>'")

// ParseArtifactURL checks an oci://<registry>/<repository>[:tag|@digest]
// URL and returns the reference without scheme. Flux compatible: the same
// messages as fluxcd/pkg/oci's, except that credentials written in the URL
// are masked (redact.URL).
func ParseArtifactURL(ociURL string) (string, error) {
	if _, err := parseURL(ociURL); err != nil {
		return "", err
	}
	return strings.TrimPrefix(ociURL, URLPrefix), nil
}

// ParseRepositoryURL is ParseArtifactURL returning the repository alone
// (registry/repository, tag or digest dropped).
func ParseRepositoryURL(ociURL string) (string, error) {
	ref, err := parseURL(ociURL)
	if err != nil {
		return "", err
	}
	return ref.Context().Name(), nil
}

func parseURL(ociURL string) (name.Reference, error) {
	if !strings.HasPrefix(ociURL, URLPrefix) {
		return nil, errURLFormat
	}
	ref, err := name.ParseReference(strings.TrimPrefix(ociURL, URLPrefix))
	if err != nil {
		if masked := redact.URL(ociURL); masked != ociURL {
			// Credentials written in the URL; go-containerregistry quotes the reference.
			return nil, fmt.Errorf("'%s' invalid URL: %s", masked, redact.Quoted(err.Error(), ociURL))
		}
		return nil, fmt.Errorf("'%s' invalid URL: %w", ociURL, err)
	}
	return ref, nil
}
