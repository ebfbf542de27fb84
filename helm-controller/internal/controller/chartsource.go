package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/eddyops/eddy/pkg/controllerkit"

	"github.com/Masterminds/semver/v3"
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HelmChartLayerMediaType is the media type of the layer holding a Helm
// chart's .tgz in an OCI artifact pushed by `helm push`. An OCIRepository
// generated from a chart template selects it with operation copy, so its
// artifact is the chart archive itself (Flux's "recommended settings" for a
// chartRef OCIRepository, docs/spec/v2/helmreleases.md).
const HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// chartSource is the source a release's chart is read from: its typed,
// namespaced name and its artifact.
type chartSource struct {
	ref      *helmv2.HelmChartReference
	artifact *meta.Artifact
}

// conditionedObject is a source object with status conditions.
type conditionedObject interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
}

// newSourceObject is an empty object of a chart source kind helm-controller
// reads (HelmChart, OCIRepository, ExternalArtifact), nil for another kind.
func newSourceObject(kind string) conditionedObject {
	switch kind {
	case sourcev1.HelmChartKind:
		return &sourcev1.HelmChart{}
	case sourcev1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{}
	case sourcev1.ExternalArtifactKind:
		return &sourcev1.ExternalArtifact{}
	}
	return nil
}

// reconcileChartTemplate server-side applies the object spec.chart
// generates, `<hrNs>-<hrName>` labelled with the HelmRelease: a HelmChart in
// the sourceRef's namespace (kind HelmChart, the default) or an
// OCIRepository in the HelmRelease's (kind OCIRepository), and records it in
// status.helmChart (HelmReleaseStatus.SetChart). A previously generated
// object that is no longer wanted (spec.chartRef, another kind or
// namespace) is deleted first. Flux compatible (helm-controller v1.7). It
// returns the generation the apply left the object at (0 without
// spec.chart), which the cache may not show yet.
func (r *HelmReleaseReconciler) reconcileChartTemplate(ctx context.Context, obj *helmv2.HelmRelease) (int64, *failure) {
	want := obj.GetHelmChartTemplateReference()
	if cur := obj.Status.GetHelmChartReference(); cur != nil && !cur.Matches(want) {
		if err := r.deleteGeneratedChart(ctx, obj, cur); err != nil {
			return 0, fail(helmv2.ArtifactFailedReason, "failed to delete %s '%s/%s': %s", cur.Kind, cur.Namespace, cur.Name, err)
		}
	}
	if want == nil {
		return 0, nil
	}
	tpl := obj.Spec.Chart
	var spec map[string]any
	switch want.Kind {
	case sourcev1.HelmChartKind:
		if tpl.Spec.SourceRef == nil || tpl.Spec.Chart == "" {
			return 0, fail(helmv2.ArtifactFailedReason, "chart.spec.chart and chart.spec.sourceRef must be set when chart.kind is not 'OCIRepository'").Stall()
		}
		if r.NoCrossNamespaceRefs && want.Namespace != obj.Namespace {
			return 0, fail("AccessDenied", "cross-namespace references are not allowed: %s '%s/%s'",
				tpl.Spec.SourceRef.Kind, want.Namespace, tpl.Spec.SourceRef.Name).Stall()
		}
		spec = helmChartSpec(obj)
	case sourcev1.OCIRepositoryKind:
		if tpl.Spec.URL == "" {
			return 0, fail(helmv2.ArtifactFailedReason, "chart.spec.url must be set when chart.kind is 'OCIRepository'").Stall()
		}
		var err error
		if spec, err = ociRepositorySpec(obj); err != nil {
			return 0, fail(helmv2.ArtifactFailedReason, "failed to build %s '%s/%s': %s", want.Kind, want.Namespace, want.Name, err).Stall()
		}
	default:
		return 0, fail(helmv2.ArtifactFailedReason, "chart.kind '%s' is not supported", want.Kind).Stall()
	}
	labels := map[string]any{}
	annotations := map[string]any{}
	if tpl.ObjectMeta != nil {
		for k, v := range tpl.ObjectMeta.Labels {
			labels[k] = v
		}
		for k, v := range tpl.ObjectMeta.Annotations {
			annotations[k] = v
		}
	}
	labels[NameLabel] = obj.Name
	labels[NamespaceLabel] = obj.Namespace
	md := map[string]any{"name": want.Name, "namespace": want.Namespace, "labels": labels}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sourcev1.GroupVersion.String(), "kind": want.Kind, "metadata": md, "spec": spec,
	}}
	if err := r.Patch(ctx, u, client.Apply, client.FieldOwner(ControllerName), client.ForceOwnership); err != nil { //nolint:staticcheck // unstructured apply
		return 0, fail(helmv2.ArtifactFailedReason, "failed to apply %s '%s/%s': %s", want.Kind, want.Namespace, want.Name, err)
	}
	obj.Status.SetChart(want)
	return u.GetGeneration(), nil
}

// helmChartSpec is the spec of the HelmChart generated from spec.chart:
// version `*` and reconcileStrategy ChartVersion when unset (code defaults
// since v1.7), interval the template's or the HelmRelease's.
func helmChartSpec(obj *helmv2.HelmRelease) map[string]any {
	tpl := obj.Spec.Chart.Spec
	ref := map[string]any{"kind": tpl.SourceRef.Kind, "name": tpl.SourceRef.Name}
	if tpl.SourceRef.APIVersion != "" {
		ref["apiVersion"] = tpl.SourceRef.APIVersion
	}
	spec := map[string]any{"chart": tpl.Chart, "version": tpl.GetVersion(), "sourceRef": ref,
		"interval": obj.GetTemplateInterval().Duration.String(), "reconcileStrategy": tpl.GetReconcileStrategy()}
	if len(tpl.ValuesFiles) > 0 {
		files := make([]any, len(tpl.ValuesFiles))
		for i, f := range tpl.ValuesFiles {
			files[i] = f
		}
		spec["valuesFiles"] = files
	}
	if tpl.IgnoreMissingValuesFiles {
		spec["ignoreMissingValuesFiles"] = true
	}
	if v := tpl.Verify; v != nil {
		verify := map[string]any{"provider": v.Provider}
		if v.SecretRef != nil {
			verify["secretRef"] = map[string]any{"name": v.SecretRef.Name}
		}
		spec["verify"] = verify
	}
	return spec
}

// ociRepositorySpec is the spec of the OCIRepository generated from
// spec.chart: the template's OCIRepository fields, interval the template's
// or the HelmRelease's, and, when the template selects no layer, the Helm
// chart layer copied as it is (HelmChartLayerMediaType).
func ociRepositorySpec(obj *helmv2.HelmRelease) (map[string]any, error) {
	spec := *obj.Spec.Chart.Spec.OCIRepositorySpec.DeepCopy()
	interval := obj.GetTemplateInterval()
	spec.Interval = &interval
	if spec.LayerSelector == nil {
		spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: HelmChartLayerMediaType, Operation: sourcev1.OCILayerCopy}
	}
	return k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&spec)
}

// deleteGeneratedChart deletes the chart source ref names when this
// HelmRelease generated it (its labels name the HelmRelease), and clears
// status.helmChart. Already gone is not an error.
func (r *HelmReleaseReconciler) deleteGeneratedChart(ctx context.Context, obj *helmv2.HelmRelease, ref *helmv2.HelmChartReference) error {
	if ref == nil {
		obj.Status.SetChart(nil)
		return nil
	}
	if src := newSourceObject(ref.Kind); src != nil {
		err := r.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, src)
		if err == nil && src.GetLabels()[NameLabel] == obj.Name && src.GetLabels()[NamespaceLabel] == obj.Namespace {
			err = r.Delete(ctx, src)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	obj.Status.SetChart(nil)
	return nil
}

// source returns the chart source the release is built from (spec.chartRef,
// else the object spec.chart generated), Ready with an artifact. Flux
// compatible messages (SourceNotReady, ArtifactFailed).
//
// applied is the generation reconcileChartTemplate left the generated
// object at: a cached copy older than that (or none yet, right after it
// was created) is one source-controller has not reconciled, not one to
// release from.
func (r *HelmReleaseReconciler) source(ctx context.Context, obj *helmv2.HelmRelease, applied int64) (*chartSource, *failure) {
	ref := obj.Status.GetHelmChartReference()
	if obj.Spec.ChartRef != nil {
		ref = obj.GetHelmChartReference()
		if newSourceObject(ref.Kind) == nil {
			return nil, fail(helmv2.ArtifactFailedReason, "chartRef kind '%s' is not supported by Eddy yet", ref.Kind).Stall()
		}
		if r.NoCrossNamespaceRefs && ref.Namespace != obj.Namespace {
			return nil, fail("AccessDenied", "cross-namespace references are not allowed: %s '%s/%s'", ref.Kind, ref.Namespace, ref.Name).Stall()
		}
		if ref.Kind == sourcev1.ExternalArtifactKind && !r.AllowExternalArtifact {
			return nil, fail("AccessDenied", "can't access '%s/%s/%s', %s feature gate is disabled",
				ref.Kind, ref.Namespace, ref.Name, controllerkit.ExternalArtifact).Stall()
		}
	}
	if ref == nil {
		return nil, fail(helmv2.ArtifactFailedReason, "could not get Source object: no chart source")
	}
	src := newSourceObject(ref.Kind)
	if src == nil {
		return nil, fail(helmv2.ArtifactFailedReason, "could not get Source object: kind '%s' is not supported", ref.Kind).Stall()
	}
	err := r.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, src)
	if err != nil && !(apierrors.IsNotFound(err) && applied > 0) {
		return nil, fail(helmv2.ArtifactFailedReason, "could not get Source object: %s", err)
	}
	why := ""
	if ref.Kind == sourcev1.ExternalArtifactKind {
		// No observedGeneration (its producer owns the status): only its
		// artifact counts, as in Flux.
		if controllerkit.ArtifactOf(src) == nil {
			why = "does not have an artifact"
		}
		return r.readySource(ref, src, why)
	}
	ready := apimeta.FindStatusCondition(src.GetConditions(), meta.ReadyCondition)
	switch {
	case err != nil || src.GetGeneration() < applied || src.GetGeneration() != src.GetObservedGeneration():
		why = "latest generation of object has not been reconciled"
	case ready == nil || ready.Status != metav1.ConditionTrue:
		why = "not ready"
		if ready != nil {
			why = ready.Message
		}
	case controllerkit.ArtifactOf(src) == nil:
		why = "does not have an artifact"
	}
	return r.readySource(ref, src, why)
}

// readySource is src as the chart source, or SourceNotReady with why
// when why is not "".
func (r *HelmReleaseReconciler) readySource(ref *helmv2.HelmChartReference, src conditionedObject, why string) (*chartSource, *failure) {
	if why != "" {
		f := fail(helmv2.SourceNotReadyReason, "%s '%s/%s' is not ready: %s", ref.Kind, ref.Namespace, ref.Name, why)
		f.Waiting, f.Retry = true, r.RequeueDependency
		return nil, f
	}
	return &chartSource{ref: ref, artifact: controllerkit.ArtifactOf(src)}, nil
}

// loadChart downloads the source's artifact (a chart .tgz: a HelmChart's,
// or the Helm layer an OCIRepository copied), verifies its digest and loads
// it with Helm's loader. From an OCIRepository the chart version gets the
// artifact digest (mutateChartVersion); the digest is returned, "" for a
// HelmChart. Flux compatible messages.
func (r *HelmReleaseReconciler) loadChart(ctx context.Context, src *chartSource) (*chart.Chart, string, *failure) {
	var ch *chart.Chart
	// FetchArtifact refuses, before any request, an artifact that
	// source-controller did not sign for this source object.
	// An ExternalArtifact's is not signed (another controller publishes
	// it): its digest is required and checked as it streams.
	owner := artifact.Owner{Kind: src.ref.Kind, Namespace: src.ref.Namespace, Name: src.ref.Name}
	fetch := r.Fetcher.FetchArtifact
	if src.ref.Kind == sourcev1.ExternalArtifactKind {
		fetch = r.Fetcher.FetchExternal
	}
	err := fetch(ctx, owner, src.artifact, func(rd io.Reader, _ artifact.Limits) error {
		var err error
		ch, err = loader.LoadArchive(rd)
		return err
	})
	if errors.Is(err, artifact.ErrNotFound) {
		f := fail(helmv2.ArtifactFailedReason, "Source not ready: artifact not found. Retrying in %s", r.RequeueDependency)
		f.Waiting, f.Retry = true, r.RequeueDependency
		return nil, "", f
	}
	if err != nil {
		return nil, "", fail(helmv2.ArtifactFailedReason, "Could not load chart: %s", err)
	}
	if !revisionHasDigest(src) {
		return ch, "", nil
	}
	ociDigest, err := mutateChartVersion(ch, src.artifact.Revision, !r.DisableChartDigestTracking)
	if err != nil {
		return nil, "", fail(helmv2.ChartMutateErrorReason, "%s", err)
	}
	return ch, ociDigest, nil
}

// revisionHasDigest tells whether src's revision names an immutable
// digest to track in the chart version: an OCIRepository's always, an
// ExternalArtifact's when it has one (`<algo>:<hex>`; it may be a bare
// version). Flux compatible.
func revisionHasDigest(src *chartSource) bool {
	switch src.ref.Kind {
	case sourcev1.OCIRepositoryKind:
		return true
	case sourcev1.ExternalArtifactKind:
		return strings.Contains(src.artifact.Revision, ":")
	}
	return false
}

// mutateChartVersion appends the first 12 hex characters of the artifact
// digest in revision (`<tag>@sha256:<hex>` or `sha256:<hex>`, an
// OCIRepository's) to the chart version as semver build metadata, so that
// a chart re-pushed under the same version is upgraded, and returns the
// digest part Flux records (status.lastAttemptedRevisionDigest, history
// ociDigest, event metadata oci-digest). A tag that is a semver version
// (`_` read as `+`, as Helm writes it) must equal the chart version.
// Without track (feature gate DisableChartDigestTracking on) the version
// is left as it is; the checks and the returned digest are the same.
// Flux compatible (helm-controller mutateChartWithSourceRevision).
func mutateChartVersion(ch *chart.Chart, revision string, track bool) (string, error) {
	ver, err := semver.NewVersion(ch.Metadata.Version)
	if err != nil {
		return "", fmt.Errorf("invalid chart version %s", ch.Metadata.Version)
	}
	ociDigest := revision
	if tag, dgst, ok := strings.Cut(revision, "@"); ok {
		if tagVer, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil {
			if strings.Contains(dgst, "@") || !tagVer.Equal(ver) {
				return "", fmt.Errorf("artifact revision %s does not match chart version %s", tag, ch.Metadata.Version)
			}
			ociDigest = dgst
		}
	}
	// The hex after the last ':' (Flux splits `<algo>:<hex>` and takes the
	// second part; a non-semver tag stays in the recorded digest).
	parts := strings.Split(ociDigest, ":")
	if len(parts) != 2 || len(parts[1]) < 12 {
		return "", fmt.Errorf("invalid artifact revision %s", ociDigest)
	}
	withDigest, err := ver.SetMetadata(parts[1][:12])
	if err != nil {
		return "", err
	}
	if track {
		ch.Metadata.Version = withDigest.String()
	}
	return ociDigest, nil
}
