// Package postrender builds the Helm post-renderer of a HelmRelease and the
// digests of its post-rendering fields, as Flux's helm-controller does
// (flux-contract-2.10.md §2.1 fact 8).
package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"helm.sh/helm/v3/pkg/postrender"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/kustomize"
)

// Origin label keys set on every rendered object (Flux compatible).
var (
	NameLabel      = helmv2.GroupVersion.Group + "/name"
	NamespaceLabel = helmv2.GroupVersion.Group + "/namespace"
)

// Build returns hr's post-renderer; it runs, in order, each
// spec.postRenderers[].kustomize (patches with their targets, then images),
// then spec.commonMetadata (labels and annotations on metadata), then the
// origin labels helm.toolkit.fluxcd.io/name and /namespace = hr's name and
// namespace, last so they win over a commonMetadata label of the same key.
// The result is never nil for a non-nil hr; nil hr gives nil.
func Build(hr *helmv2.HelmRelease) postrender.PostRenderer {
	if hr == nil {
		return nil
	}
	var steps combined
	for _, pr := range hr.Spec.PostRenderers {
		if pr.Kustomize != nil {
			steps = append(steps, kustomizeStep{patches: pr.Kustomize.Patches, images: pr.Kustomize.Images})
		}
	}
	if cm := hr.Spec.CommonMetadata; cm != nil {
		steps = append(steps, metadataStep{labels: cm.Labels, annotations: cm.Annotations})
	}
	steps = append(steps, metadataStep{labels: map[string]string{
		NameLabel:      hr.GetName(),
		NamespaceLabel: hr.GetNamespace(),
	}})
	return steps
}

// combined runs its steps in order, each on the previous one's output.
type combined []postrender.PostRenderer

func (c combined) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for _, step := range c {
		var err error
		if out, err = step.Run(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kustomizeStep runs kustomize in memory on the rendered manifests with the
// post-renderer's patches and images.
type kustomizeStep struct {
	patches []kustomizev1.Patch
	images  []kustomizev1.Image
}

const renderedFile = "rendered.yaml"

func (k kustomizeStep) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	kus := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{renderedFile},
	}
	kus.Patches = kustomize.Patches(k.patches)
	kus.Images = kustomize.Images(k.images)
	kusYAML, err := json.Marshal(kus)
	if err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(renderedFile, in.Bytes()); err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", kusYAML); err != nil {
		return nil, err
	}
	res, err := kustomize.Run(fs, ".")
	if err != nil {
		return nil, err
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// metadataStep sets labels and annotations on every object's metadata
// (not on selectors or templates), overwriting keys already set.
type metadataStep struct {
	labels, annotations map[string]string
}

func (m metadataStep) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	if len(m.labels) == 0 && len(m.annotations) == 0 {
		return in, nil
	}
	rf := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
	res, err := rf.NewResMapFromBytes(in.Bytes())
	if err != nil {
		return nil, err
	}
	if len(m.labels) > 0 {
		t := &builtins.LabelTransformerPlugin{Labels: m.labels,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := t.Transform(res); err != nil {
			return nil, err
		}
	}
	if len(m.annotations) > 0 {
		t := &builtins.AnnotationsTransformerPlugin{Annotations: m.annotations,
			FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := t.Transform(res); err != nil {
			return nil, err
		}
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, err
	}
	return bytes.NewBuffer(out), nil
}

// The JSON shapes Flux digests. Eddy's kustomize Patch omits an empty
// patch string where Flux's writes "patch":"", so the digest encodes
// through these to give Flux's bytes.
type (
	fluxPatch struct {
		Patch  string                `json:"patch"`
		Target *kustomizev1.Selector `json:"target,omitempty"`
	}
	fluxKustomize struct {
		Patches []fluxPatch         `json:"patches,omitempty"`
		Images  []kustomizev1.Image `json:"images,omitempty"`
	}
	fluxPostRenderer struct {
		Kustomize *fluxKustomize `json:"kustomize,omitempty"`
	}
)

// PostRenderersDigest returns the digest Flux stores in
// status.observedPostRenderersDigest: "sha256:<hex>" of the JSON encoding
// (encoding/json Encoder, newline included) of spec.postRenderers; "" when
// the field is unset (nil; an empty list has a digest).
func PostRenderersDigest(hr *helmv2.HelmRelease) string {
	if hr.Spec.PostRenderers == nil {
		return ""
	}
	prs := make([]fluxPostRenderer, 0, len(hr.Spec.PostRenderers))
	for _, pr := range hr.Spec.PostRenderers {
		var out fluxPostRenderer
		if k := pr.Kustomize; k != nil {
			out.Kustomize = &fluxKustomize{Images: k.Images}
			for _, p := range k.Patches {
				out.Kustomize.Patches = append(out.Kustomize.Patches, fluxPatch{Patch: p.Patch, Target: p.Target})
			}
		}
		prs = append(prs, out)
	}
	return jsonDigest(prs)
}

// CommonMetadataDigest returns the digest Flux stores in
// status.observedCommonMetadataDigest: "sha256:<hex>" of the JSON encoding
// of spec.commonMetadata; "" when unset.
func CommonMetadataDigest(hr *helmv2.HelmRelease) string {
	if hr.Spec.CommonMetadata == nil {
		return ""
	}
	return jsonDigest(hr.Spec.CommonMetadata)
}

func jsonDigest(v any) string {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
