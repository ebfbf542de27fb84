package v2

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// HelmChartReference is the typed, namespaced name of the chart source of a
// HelmRelease: a HelmChart, an OCIRepository or an ExternalArtifact. Flux
// compatible (helm-controller api v1.7 v2/reference_types.go).
type HelmChartReference struct {
	// Kind of the chart source.
	// +kubebuilder:validation:Enum=HelmChart;OCIRepository;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the chart source.
	// +required
	Name string `json:"name"`

	// Namespace of the chart source.
	// +required
	Namespace string `json:"namespace"`
}

// String is `<kind>/<namespace>/<name>`, or "" for a nil reference.
func (in *HelmChartReference) String() string {
	if in == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s", in.Kind, in.Namespace, in.Name)
}

// Matches reports whether in and other name the same object; false when
// either is nil.
func (in *HelmChartReference) Matches(other *HelmChartReference) bool {
	return in != nil && other != nil && *in == *other
}

// GetHelmChartTemplateReference is the object spec.chart generates, nil
// without spec.chart: kind spec.chart.kind (default HelmChart), name
// `<hrNamespace>-<hrName>`, in sourceRef's namespace for a HelmChart with
// one, else in the HelmRelease's. Flux compatible.
func (in *HelmRelease) GetHelmChartTemplateReference() *HelmChartReference {
	if in == nil || in.Spec.Chart == nil {
		return nil
	}
	ref := &HelmChartReference{Kind: in.Spec.Chart.Kind, Name: in.Namespace + "-" + in.Name, Namespace: in.Namespace}
	if ref.Kind == "" {
		ref.Kind = sourcev1.HelmChartKind
	}
	if sr := in.Spec.Chart.Spec.SourceRef; ref.Kind == sourcev1.HelmChartKind && sr != nil && sr.Namespace != "" {
		ref.Namespace = sr.Namespace
	}
	return ref
}

// GetHelmChartReference is spec.chartRef with the defaults applied (kind
// HelmChart, the HelmRelease's namespace), nil without spec.chartRef.
func (in *HelmRelease) GetHelmChartReference() *HelmChartReference {
	if in == nil || in.Spec.ChartRef == nil {
		return nil
	}
	ref := &HelmChartReference{Kind: in.Spec.ChartRef.Kind, Name: in.Spec.ChartRef.Name, Namespace: in.Spec.ChartRef.Namespace}
	if ref.Kind == "" {
		ref.Kind = sourcev1.HelmChartKind
	}
	if ref.Namespace == "" {
		ref.Namespace = in.Namespace
	}
	return ref
}

// GetTemplateInterval is spec.chart.spec.interval, else spec.interval.
func (in *HelmRelease) GetTemplateInterval() metav1.Duration {
	if in.Spec.Chart == nil || in.Spec.Chart.Spec.Interval == nil {
		return in.Spec.Interval
	}
	return *in.Spec.Chart.Spec.Interval
}

// SetChart records ref in status.helmChart: `<namespace>/<name>` for a
// HelmChart (as before v2.10), `<kind>/<namespace>/<name>` otherwise; a nil
// ref clears it. Flux compatible.
func (in *HelmReleaseStatus) SetChart(ref *HelmChartReference) {
	in.HelmChart = strings.TrimPrefix(ref.String(), sourcev1.HelmChartKind+"/")
}

// GetHelmChartReference parses status.helmChart: two parts are a
// HelmChart's `<namespace>/<name>`, three `<kind>/<namespace>/<name>`; nil
// when empty or of another shape.
func (in HelmReleaseStatus) GetHelmChartReference() *HelmChartReference {
	if in.HelmChart == "" {
		return nil
	}
	switch s := strings.Split(in.HelmChart, "/"); len(s) {
	case 2:
		return &HelmChartReference{Kind: sourcev1.HelmChartKind, Namespace: s[0], Name: s[1]}
	case 3:
		return &HelmChartReference{Kind: s[0], Namespace: s[1], Name: s[2]}
	}
	return nil
}
