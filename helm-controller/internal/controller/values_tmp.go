package controller

// TEMPORARY (issue #12): until the render helper's packages land on main,
// values are spec.values only (no valuesFrom), digested here. Switch the two
// call sites below to internal/values.Compose and internal/values.Digest.

import (
	"context"
	"encoding/json"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/opencontainers/go-digest"
	"helm.sh/helm/v3/pkg/postrender"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// composeValues is the temporary stand-in for values.Compose: spec.values.
func composeValues(_ context.Context, _ client.Reader, obj *helmv2.HelmRelease) (map[string]any, error) {
	if obj.Spec.Values == nil || len(obj.Spec.Values.Raw) == 0 {
		return map[string]any{}, nil
	}
	var v map[string]any
	if err := json.Unmarshal(obj.Spec.Values.Raw, &v); err != nil {
		return nil, fmt.Errorf("failed to parse spec.values: %w", err)
	}
	if v == nil {
		v = map[string]any{}
	}
	return v, nil
}

// valuesDigest is the temporary stand-in for values.Digest: `sha256:` of
// the JSON encoding of v, nothing for empty values. Flux compatible
// (fluxcd/pkg chartutil.DigestValues).
func valuesDigest(v map[string]any) string {
	d := digest.Canonical.Digester()
	if len(v) > 0 {
		if err := json.NewEncoder(d.Hash()).Encode(v); err != nil {
			return ""
		}
	}
	return d.Digest().String()
}

// postRenderersDigest is the temporary stand-in for
// postrender.PostRenderersDigest: "" without post-renderers, else
// `sha256:` of their JSON encoding.
func postRenderersDigest(obj *helmv2.HelmRelease) string {
	if obj.Spec.PostRenderers == nil {
		return ""
	}
	return jsonDigest(obj.Spec.PostRenderers)
}

// commonMetadataDigest is the temporary stand-in for
// postrender.CommonMetadataDigest.
func commonMetadataDigest(obj *helmv2.HelmRelease) string {
	if obj.Spec.CommonMetadata == nil {
		return ""
	}
	return jsonDigest(obj.Spec.CommonMetadata)
}

func jsonDigest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return digest.Canonical.FromBytes(b).String()
}

// postRenderer is the temporary stand-in for postrender.Build: none.
func postRenderer(*helmv2.HelmRelease) postrender.PostRenderer { return nil }
