package helmtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// PodinfoChartDir returns the directory of the real podinfo chart (version 6.14.1) in the
// project's companion folder, testdata/repos/podinfo/charts/podinfo. When shared/ is missing
// it skips the test (or fails it under EDDY_REQUIRE_SHARED=1), as testenv.TestdataDir does.
func PodinfoChartDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "charts", "podinfo")
}

// PackageOption changes the chart that PackageChart writes.
type PackageOption func(*packageOptions)

type packageOptions struct {
	version, appVersion string
	values              []byte
}

// WithVersion sets the chart version (Chart.yaml version, a SemVer 2 string), e.g. to publish
// "a new version" of an existing chart; the archive is then named <name>-<version>.tgz.
func WithVersion(version string) PackageOption {
	return func(o *packageOptions) { o.version = version }
}

// WithAppVersion sets Chart.yaml appVersion.
func WithAppVersion(appVersion string) PackageOption {
	return func(o *packageOptions) { o.appVersion = appVersion }
}

// WithValues replaces the chart's values.yaml with the given YAML document (the chart's
// default values).
func WithValues(valuesYAML string) PackageOption {
	return func(o *packageOptions) { o.values = []byte(valuesYAML) }
}

// PackageChart loads the chart directory chartDir with Helm's loader (which honours
// .helmignore), applies the options and writes it with chartutil.Save, as `helm package` does.
// It returns the absolute path of <t.TempDir()>/<name>-<version>.tgz. An invalid chart or
// option (e.g. a version that is not SemVer) fails the test.
func PackageChart(t testing.TB, chartDir string, opts ...PackageOption) string {
	t.Helper()
	var o packageOptions
	for _, opt := range opts {
		opt(&o)
	}
	c, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatalf("helmtest: loading chart %s: %v", chartDir, err)
	}
	if o.version != "" {
		c.Metadata.Version = o.version
	}
	if o.appVersion != "" {
		c.Metadata.AppVersion = o.appVersion
	}
	if o.values != nil {
		vals := map[string]any{}
		if err := yaml.Unmarshal(o.values, &vals); err != nil {
			t.Fatalf("helmtest: WithValues: %v", err)
		}
		c.Values = vals
		replaced := false
		for _, f := range c.Raw {
			if f.Name == chartutil.ValuesfileName {
				f.Data, replaced = o.values, true
			}
		}
		if !replaced {
			c.Raw = append(c.Raw, &chart.File{Name: chartutil.ValuesfileName, Data: o.values})
		}
	}
	// Save validates the metadata (SemVer version, name) as `helm package` does.
	path, err := chartutil.Save(c, t.TempDir())
	if err != nil {
		t.Fatalf("helmtest: packaging chart %s: %v", c.Name(), err)
	}
	return path
}

// MinimalChart writes, under t.TempDir(), a chart directory named name with the given version
// whose only template is a ConfigMap named after the release, with data.greeting taken from
// the value "greeting" (default "hello"). It needs neither shared/ nor any controller in the
// cluster, so an install with it succeeds on the `api` profile. It returns the directory.
func MinimalChart(t testing.TB, name, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: " + name + "\nversion: " + version + "\nappVersion: \"" + version + "\"\ntype: application\n",
		"values.yaml": "greeting: hello\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
data:
  greeting: {{ .Values.greeting | quote }}
  chartVersion: {{ .Chart.Version | quote }}
`,
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
