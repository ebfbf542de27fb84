package v1beta1

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// ObservedSource is what an ArtifactGenerator read of one source's
// artifact.
//
// +kubebuilder:object:generate=false
type ObservedSource struct {
	// Digest, Revision and URL are the source artifact's.
	Digest, Revision, URL string
	// OriginRevision is the artifact's metadata OriginRevisionKey, if any.
	OriginRevision string
}

// SourcesDigest is status.observedSourcesDigest of sources (by alias):
// "sha256:<hex>" over the lines "<alias>=[digest=…,revision=…,url=…]"
// sorted and joined by "|", the value Flux's source-watcher writes for the
// same sources.
func SourcesDigest(sources map[string]ObservedSource) string {
	lines := make([]string, 0, len(sources))
	for alias, s := range sources {
		lines = append(lines, fmt.Sprintf("%s=[digest=%s,revision=%s,url=%s]", alias, s.Digest, s.Revision, s.URL))
	}
	slices.Sort(lines)
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(strings.Join(lines, "|"))))
}
