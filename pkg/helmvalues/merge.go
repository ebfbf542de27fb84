// Package helmvalues holds what source-controller (values files merged
// into a packaged chart) and helm-controller (valuesFrom and spec.values)
// both do with Helm values.
package helmvalues

// Merge returns a new map: a with b deep-merged on top. A map in b merges
// into a map in a under the same key; any other value of b replaces a's
// (Helm's CLI values merge, which Flux uses for valuesFiles and valuesFrom).
// Neither input is modified; nested maps of a merged with b are copies.
func Merge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = Merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
