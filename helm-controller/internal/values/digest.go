package values

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Digest returns the config digest of values as Flux computes it for
// status.lastAttemptedConfigDigest and the history's configDigest
// (fluxcd/pkg chartutil.DigestValues with sha256): "sha256:<hex>" of the
// YAML (go-yaml v2) encoding of values with every map's keys sorted. Nil or
// empty values digest the empty input. An unencodable value yields "".
func Digest(values map[string]any) string {
	h := sha256.New()
	if len(values) > 0 {
		doc := yaml.JSONObjectToYAMLObject(values)
		sortMapSlice(doc)
		if err := goyaml.NewEncoder(h).Encode(doc); err != nil {
			return ""
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// sortMapSlice orders keys at every depth, lists keeping their order.
func sortMapSlice(ms goyaml.MapSlice) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].Key.(string) < ms[j].Key.(string) })
	for _, item := range ms {
		sortNested(item.Value)
	}
}

func sortNested(v any) {
	switch t := v.(type) {
	case goyaml.MapSlice:
		sortMapSlice(t)
	case []any:
		for _, item := range t {
			sortNested(item)
		}
	}
}
