package oci

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ListOptions filter List's tags.
type ListOptions struct {
	// SemverFilter keeps the tags that are versions (three dot-separated
	// parts, a leading v allowed) in this Masterminds/semver range.
	SemverFilter string
	// RegexFilter keeps the tags this regular expression (RE2) matches.
	RegexFilter string
	// IncludeCosignArtifacts keeps the tags ending in .att, .sbom or .sig,
	// which are left out by default.
	IncludeCosignArtifacts bool
}

// List returns the tags of the repository repo (registry/repository) that
// pass o, in reverse lexical order, each with its manifest's Metadata: URL
// repo:tag and Digest sha256:<hex>. Flux compatible (fluxcd/pkg/oci List).
// A bad filter is an error before any request.
func (c *Client) List(ctx context.Context, repo string, o ListOptions) ([]Metadata, error) {
	var constraint *semver.Constraints
	if o.SemverFilter != "" {
		var err error
		if constraint, err = semver.NewConstraint(o.SemverFilter); err != nil {
			return nil, fmt.Errorf("semver '%s' parse error: %w", o.SemverFilter, err)
		}
	}
	var re *regexp.Regexp
	if o.RegexFilter != "" {
		var err error
		if re, err = regexp.Compile(o.RegexFilter); err != nil {
			return nil, fmt.Errorf("regex '%s' parse error: %w", o.RegexFilter, err)
		}
	}
	if _, err := name.NewRepository(repo); err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	tags, err := crane.ListTags(repo, c.with(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("listing tags failed: %w", registryError(repo, err))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(tags)))
	metas := []Metadata{}
	for _, tag := range tags {
		if !o.IncludeCosignArtifacts && IsCosignArtifact(tag) {
			continue
		}
		if constraint != nil {
			v, err := ParseVersion(tag)
			if err != nil || !constraint.Check(v) {
				continue
			}
		}
		if re != nil && !re.MatchString(tag) {
			continue
		}
		ref := repo + ":" + tag
		raw, err := crane.Manifest(ref, c.with(ctx)...)
		if err != nil {
			return nil, fmt.Errorf("fetching manifest failed: %w", registryError(ref, err))
		}
		m, err := v1.ParseManifest(strings.NewReader(string(raw)))
		if err != nil {
			return nil, fmt.Errorf("parsing manifest of %s failed: %w", ref, err)
		}
		digest, _, err := v1.SHA256(strings.NewReader(string(raw)))
		if err != nil {
			return nil, err
		}
		meta := MetadataFromAnnotations(m.Annotations)
		meta.Annotations = nil
		meta.URL, meta.Digest = ref, digest.String()
		metas = append(metas, *meta)
	}
	return metas, nil
}

// ParseVersion reads a tag as a version the way Flux does: three
// dot-separated parts, then Masterminds/semver (a leading v and leading
// zeros allowed). Flux compatible (fluxcd/pkg/version).
func ParseVersion(tag string) (*semver.Version, error) {
	if strings.Count(tag, ".") < 2 {
		return nil, semver.ErrInvalidSemVer
	}
	return semver.NewVersion(tag)
}

// IsCosignArtifact reports whether tag ends in .att, .sbom or .sig, cosign's
// attestation, SBOM and signature tags.
func IsCosignArtifact(tag string) bool {
	return strings.HasSuffix(tag, ".att") || strings.HasSuffix(tag, ".sbom") || strings.HasSuffix(tag, ".sig")
}
