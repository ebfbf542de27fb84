package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/eddyops/eddy/pkg/helmvalues"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// readValuesFile returns a values file's bytes; ok is false for a file that
// does not exist.
type readValuesFile func(name string) (data []byte, ok bool, err error)

// mergeValuesFiles merges the named values files in order, later keys
// winning and maps merged deeply (Flux's transform.MergeMaps). A missing
// file is an error unless ignoreMissing; the merged file names are returned.
func mergeValuesFiles(names []string, ignoreMissing bool, read readValuesFile) (map[string]any, []string, error) {
	merged := map[string]any{}
	var used []string
	for _, n := range names {
		data, ok, err := read(n)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if ignoreMissing {
				continue
			}
			return nil, nil, fmt.Errorf("no values file found at path '%s'", n)
		}
		vals := map[string]any{}
		if err := yaml.Unmarshal(data, &vals); err != nil {
			return nil, nil, fmt.Errorf("unmarshaling values from '%s' failed: %w", n, err)
		}
		merged = helmvalues.Merge(merged, vals)
		used = append(used, n)
	}
	return merged, used, nil
}

// overwriteValues makes vals the chart's default values (values.yaml in
// both Raw and Values). It reports false when the chart's values.yaml has
// exactly these bytes already (nothing merged, as Flux reports it).
func overwriteValues(c *helmchart.Chart, vals map[string]any) (bool, error) {
	var data []byte
	if len(vals) > 0 {
		var err error
		if data, err = yaml.Marshal(vals); err != nil {
			return false, err
		}
	}
	for _, f := range c.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		if bytes.Equal(f.Data, data) {
			return false, nil
		}
		f.Data = data
		c.Values = vals
		return true, nil
	}
	// A chart without values.yaml gets one.
	c.Raw = append(c.Raw, &helmchart.File{Name: chartutil.ValuesfileName, Data: data})
	c.Values = vals
	return true, nil
}

// readFromDir reads values files relative to root, refusing paths that
// leave it.
func readFromDir(root string) readValuesFile {
	return func(name string) ([]byte, bool, error) {
		p, err := within(root, name)
		if err != nil {
			return nil, false, err
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil, false, fmt.Errorf("no values file found at path '%s'", name)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, false, scrub(err, root)
		}
		return data, true, nil
	}
}

// readFromChart reads values files from a loaded chart's files.
func readFromChart(c *helmchart.Chart) readValuesFile {
	return func(name string) ([]byte, bool, error) {
		for _, f := range c.Raw {
			if f.Name == name {
				return f.Data, true, nil
			}
		}
		return nil, false, nil
	}
}

// mergeInto merges the values files into c's values.yaml (see
// mergeValuesFiles, overwriteValues) and returns the files merged, none
// when the values did not change.
func mergeInto(c *helmchart.Chart, names []string, ignoreMissing bool, read readValuesFile) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	vals, used, err := mergeValuesFiles(names, ignoreMissing, read)
	if err != nil {
		return nil, &BuildError{Kind: ErrValuesFiles, Err: err}
	}
	changed, err := overwriteValues(c, vals)
	if err != nil {
		return nil, &BuildError{Kind: ErrValuesFiles, Err: err}
	}
	if !changed {
		return nil, nil
	}
	return used, nil
}
