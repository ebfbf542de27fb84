package release

import (
	"encoding/json"

	"github.com/opencontainers/go-digest"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// observation is the part of a stored Helm release that its snapshot
// digest covers: the release as written to storage without its chart
// templates, files and values (metadata only), and without test hooks, so
// a `helm test` run by hand does not read as an out-of-band change. The
// same fields, JSON names and order as Flux's internal/release Observation,
// so the digest algorithm is Flux's.
type observation struct {
	Name          string             `json:"name"`
	Version       int                `json:"version"`
	Info          helmrelease.Info   `json:"info"`
	ChartMetadata json.RawMessage    `json:"chartMetadata"`
	Config        map[string]any     `json:"config"`
	Manifest      string             `json:"manifest"`
	Hooks         []helmrelease.Hook `json:"hooks"`
	Namespace     string             `json:"namespace"`
	OCIDigest     string             `json:"ociDigest,omitempty"`
}

// Digest is the snapshot digest of rel: `sha256:<hex>` of the JSON
// encoding (json.Encoder, with its trailing newline) of its observation;
// "" when it cannot be encoded. Flux compatible (internal/release/digest.go,
// observation.go).
func Digest(rel *helmrelease.Release, ociDigest string) string {
	o := observation{Name: rel.Name, Version: rel.Version, Manifest: rel.Manifest, Namespace: rel.Namespace, OCIDigest: ociDigest}
	if rel.Info != nil {
		o.Info = *rel.Info
	}
	meta := []byte("{}")
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		if b, err := json.Marshal(rel.Chart.Metadata); err == nil {
			meta = b
		}
	}
	o.ChartMetadata = meta
	if len(rel.Config) > 0 {
		o.Config = rel.Config
	}
	for _, h := range rel.Hooks {
		if h != nil && !IsTestHook(h) {
			o.Hooks = append(o.Hooks, *h)
		}
	}
	d := digest.Canonical.Digester()
	if err := json.NewEncoder(d.Hash()).Encode(o); err != nil {
		return ""
	}
	return d.Digest().String()
}

// IsTestHook reports whether h runs on `helm test`.
func IsTestHook(h *helmrelease.Hook) bool {
	for _, e := range h.Events {
		if e == helmrelease.HookTest {
			return true
		}
	}
	return false
}
