package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/helmvalues"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// helmReleaseFlags are the flags of `create helmrelease`, flux's.
type helmReleaseFlags struct {
	releaseName, source, chart, chartVersion, targetNamespace, storageNamespace, serviceAccount, strategy, chartRef string
	dependsOn, valuesFiles, valuesFrom                                                                              []string
	createNamespace                                                                                                 bool
	chartInterval                                                                                                   time.Duration
}

func newCreateHelmReleaseCommand(g *globalFlags, f *createFlags) *cobra.Command {
	h := &helmReleaseFlags{}
	cmd := &cobra.Command{
		Use:     "helmrelease [name]",
		Aliases: []string{"hr"},
		Short:   "Create or update a HelmRelease",
		Example: "  eddy create hr podinfo --source=HelmRepository/podinfo --chart=podinfo --chart-version='>6.0.0'\n" +
			"  eddy create hr podinfo --source=HelmRepository/podinfo.flux-system --chart=podinfo --values=./values.yaml --target-namespace=apps --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			hr, err := h.helmRelease(om, f.interval)
			if err != nil {
				return err
			}
			return g.create(cmd, f, creation{obj: hr, kind: helmv2.HelmReleaseKind, created: helmv2.HelmReleaseKind,
				done: func(u *ui.UI) error {
					u.Success("applied revision %s", kinds.HelmReleaseRevision(hr))
					return nil
				}})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&h.releaseName, "release-name", "", "name used for the Helm release, defaults to a composition of '[<target-namespace>-]<HelmRelease-name>'")
	fs.StringVar(&h.source, "source", "", "source that contains the chart in the format '<kind>/<name>.<namespace>', where kind must be one of: (HelmRepository, GitRepository)")
	fs.StringVar(&h.chart, "chart", "", "Helm chart name or path")
	fs.StringVar(&h.chartVersion, "chart-version", "", "Helm chart version, accepts a semver range (ignored for charts from GitRepository sources)")
	fs.StringSliceVar(&h.dependsOn, "depends-on", nil, "HelmReleases that must be ready before this release can be installed, supported formats '<name>' and '<namespace>/<name>'")
	fs.StringVar(&h.targetNamespace, "target-namespace", "", "namespace to install this release, defaults to the HelmRelease namespace")
	fs.StringVar(&h.storageNamespace, "storage-namespace", "", "namespace to store the Helm release, defaults to the target namespace")
	fs.BoolVar(&h.createNamespace, "create-target-namespace", false, "create the target namespace if it does not exist")
	fs.StringVar(&h.serviceAccount, "service-account", "", "the name of the service account to impersonate when reconciling this HelmRelease")
	fs.StringVar(&h.strategy, "reconcile-strategy", "ChartVersion", "the reconcile strategy for helm chart created by the helm release(accepted values: Revision and ChartRevision)")
	fs.DurationVar(&h.chartInterval, "chart-interval", 0, "the interval of which to check for new chart versions")
	fs.StringSliceVar(&h.valuesFiles, "values", nil, "local path to values.yaml files, also accepts comma-separated values")
	fs.StringSliceVar(&h.valuesFrom, "values-from", nil, "a Kubernetes object reference that contains the values.yaml data key in the format '<kind>/<name>', where kind must be one of: (Secret,ConfigMap)")
	fs.StringVar(&h.chartRef, "chart-ref", "", "the name of the HelmChart resource to use as source for the HelmRelease, in the format '<kind>/<name>.<namespace>', where kind must be one of: (HelmChart)")
	return cmd
}

// helmRelease is the HelmRelease om the flags describe, reconciled every
// interval; errors (flux's words) for flags that do not fit together, a
// source or reference of a kind not supported, or values files that cannot
// be read.
func (h *helmReleaseFlags) helmRelease(om metav1.ObjectMeta, interval time.Duration) (*helmv2.HelmRelease, error) {
	storageNamespace := h.storageNamespace
	if storageNamespace == "" && h.targetNamespace != "" {
		storageNamespace = h.targetNamespace
	}
	if h.chart == "" && h.chartRef == "" {
		return nil, errors.New("chart or chart-ref is required")
	}
	if h.chart != "" && h.chartRef != "" {
		return nil, errors.New("cannot use --chart in combination with --chart-ref")
	}
	if h.strategy != "Revision" && h.strategy != "ChartVersion" {
		return nil, fmt.Errorf("'%s' is an invalid reconcile strategy(valid: Revision, ChartVersion)", h.strategy)
	}
	hr := &helmv2.HelmRelease{ObjectMeta: om, Spec: helmv2.HelmReleaseSpec{
		ReleaseName: h.releaseName, Interval: metav1.Duration{Duration: interval},
		TargetNamespace: h.targetNamespace, StorageNamespace: storageNamespace, ServiceAccountName: h.serviceAccount,
	}}
	if len(h.dependsOn) > 0 {
		hr.Spec.DependsOn = meta.MakeDependsOn(h.dependsOn)
	}
	if err := h.setChart(hr); err != nil {
		return nil, err
	}
	if h.createNamespace {
		hr.Spec.Install = &helmv2.Install{CreateNamespace: true}
	}
	if err := h.setValues(hr); err != nil {
		return nil, err
	}
	return hr, nil
}

// setChart sets hr's chart: a chart template from --source and --chart,
// or --chart-ref.
func (h *helmReleaseFlags) setChart(hr *helmv2.HelmRelease) error {
	if h.chart == "" {
		kind, name, ns := kindNameNamespace(h.chartRef)
		if kind != sourcev1.HelmChartKind {
			return fmt.Errorf("chart reference kind '%s' is not supported, must be one of: %s", kind, sourcev1.HelmChartKind)
		}
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: kind, Name: name, Namespace: ns}
		return nil
	}
	kind, name, ns := kindNameNamespace(h.source)
	row, _ := kinds.ByKind(helmv2.HelmReleaseKind)
	sourceKinds := row.SourceKinds
	if kind == "" || name == "" {
		return fmt.Errorf("invalid helm chart source '%s', must be in format <kind>/<name>", h.source)
	}
	k, ok := oneOfFold(sourceKinds, kind)
	if !ok {
		return fmt.Errorf("source kind '%s' is not supported, must be one of: %s", kind, strings.Join(sourceKinds, ", "))
	}
	hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
		Chart: h.chart, Version: h.chartVersion, ReconcileStrategy: h.strategy,
		SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: k, Name: name, Namespace: ns},
	}}
	if h.chartInterval != 0 {
		hr.Spec.Chart.Spec.Interval = &metav1.Duration{Duration: h.chartInterval}
	}
	return nil
}

// setValues sets hr's values: the --values files merged in order, and
// --values-from references.
func (h *helmReleaseFlags) setValues(hr *helmv2.HelmRelease) error {
	if len(h.valuesFiles) > 0 {
		values := map[string]any{}
		for _, v := range h.valuesFiles {
			data, err := os.ReadFile(v)
			if err != nil {
				return fmt.Errorf("reading values from %s failed: %w", v, errors.Unwrap(err))
			}
			m := map[string]any{}
			if err := yaml.Unmarshal(data, &m); err != nil {
				return fmt.Errorf("converting values to JSON from %s failed: %w", v, err)
			}
			values = helmvalues.Merge(values, m)
		}
		raw, err := json.Marshal(values)
		if err != nil {
			return fmt.Errorf("marshaling values failed: %w", err)
		}
		hr.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	for _, v := range h.valuesFrom {
		kind, name, ok := strings.Cut(v, "/")
		if !ok || kind == "" {
			return fmt.Errorf("invalid Kubernetes object reference '%s', must be in format <kind>/<name>", v)
		}
		k, ok := oneOfFold([]string{"Secret", "ConfigMap"}, kind)
		if !ok {
			return fmt.Errorf("reference kind '%s' is not supported, must be one of: Secret, ConfigMap", kind)
		}
		hr.Spec.ValuesFrom = append(hr.Spec.ValuesFrom, meta.ValuesReference{Kind: k, Name: name})
	}
	return nil
}
