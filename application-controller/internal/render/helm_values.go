package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/helmvalues"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// errMissingValueFile marks a value file that does not exist, which
// ignoreMissingValueFiles skips.
var errMissingValueFile = errors.New("does not exist")

// helmValues merges a Helm source's values as Argo CD passes them to
// `helm template` (argocd-contract §1.4): valueFiles in order (relative to
// the chart directory, "/x" from the repository root, "$ref/x" from a
// multi-source ref's root; $ARGOCD_APP_* expanded), then the inline values
// (valuesObject wins over values), then parameters as --set, then those
// with forceString as --set-string, then fileParameters as --set-file.
// Parameter values are $ARGOCD_APP_* expanded and their commas escaped
// unless the value is a {list}, as Argo CD escapes them.
func helmValues(in Input, app string, h *argov1.ApplicationSourceHelm, vars map[string]string) (map[string]any, error) {
	vals := map[string]any{}
	for _, vf := range h.ValueFiles {
		data, err := readValueFile(in, app, vf, vars)
		if errors.Is(err, errMissingValueFile) && h.IgnoreMissingValueFiles {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("failed to parse value file '%s': %s", vf, err)
		}
		vals = helmvalues.Merge(vals, m)
	}
	inline := map[string]any{}
	switch {
	case h.ValuesObject != nil && len(h.ValuesObject.Raw) > 0 && string(h.ValuesObject.Raw) != "null":
		if err := json.Unmarshal(h.ValuesObject.Raw, &inline); err != nil {
			return nil, fmt.Errorf("failed to parse helm.valuesObject: %s", err)
		}
	case h.Values != "":
		if err := yaml.Unmarshal([]byte(h.Values), &inline); err != nil {
			return nil, fmt.Errorf("failed to parse helm.values: %s", err)
		}
	}
	vals = helmvalues.Merge(vals, inline)
	for _, forceString := range []bool{false, true} {
		for _, p := range h.Parameters {
			if p.ForceString != forceString {
				continue
			}
			set := p.Name + "=" + escapeSet(envsubst(p.Value, vars))
			parse := strvals.ParseInto
			if forceString {
				parse = strvals.ParseIntoString
			}
			if err := parse(set, vals); err != nil {
				return nil, fmt.Errorf("failed parsing helm parameter '%s': %s", p.Name, err)
			}
		}
	}
	for _, p := range h.FileParameters {
		read := func([]rune) (any, error) {
			data, err := readValueFile(in, app, p.Path, vars)
			return string(data), err
		}
		if err := strvals.ParseIntoFile(p.Name+"="+escapeSet(p.Path), vals, read); err != nil {
			return nil, fmt.Errorf("failed parsing helm file parameter '%s': %s", p.Name, err)
		}
	}
	return vals, nil
}

// readValueFile reads a value or --set-file file as written in the
// source, $ARGOCD_APP_* expanded (after its "$ref/" prefix, as Argo CD
// expands it). A URL is refused (Eddy fetches nothing at render time); a
// path that leaves its repository is refused; a missing file wraps
// errMissingValueFile. Messages name the file as written.
func readValueFile(in Input, app, p string, vars map[string]string) ([]byte, error) {
	root, base, rest := in.Root, app, envsubst(p, vars)
	if r, sub, ok := refRoot(in, p); ok {
		root, base, rest = r, ".", envsubst(sub, vars)
	}
	if u, err := url.Parse(rest); err == nil && len(u.Scheme) > 1 {
		return nil, fmt.Errorf("value file '%s': URLs are not supported by Eddy, put the file in a repository", p)
	}
	abs, err := inRoot(root, base, rest)
	if err != nil {
		return nil, fmt.Errorf("value file %w", outside(p))
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("value file '%s' %w", p, errMissingValueFile)
	}
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("value file '%s' is not a file", p)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("value file '%s' cannot be read", p)
	}
	return data, nil
}

// escapeSet escapes the commas of a --set value that is not a {list}, so
// that Helm does not split it, as Argo CD does; an already escaped comma
// stays as it is.
func escapeSet(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	prev := rune(0)
	for _, r := range v {
		if r == ',' && prev != '\\' {
			b.WriteString(`\,`)
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}
