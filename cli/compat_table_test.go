package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdSpec is the part of a CustomResourceDefinition the README's
// compatibility table is checked against: the kind and, for the stored
// version, the spec's fields and the enums of spec.type and spec.provider.
type crdSpec struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Storage bool `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema struct {
					Properties struct {
						Spec struct {
							Properties map[string]struct {
								Enum []string `json:"enum"`
							} `json:"properties"`
						} `json:"spec"`
					} `json:"properties"`
				} `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// fluxCRDs reads config/crd/bases and keeps Flux's groups (*.fluxcd.io),
// mapping each kind to its stored version's spec fields and their enums.
func fluxCRDs(t *testing.T, root string) map[string]map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd crdSpec
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.HasSuffix(crd.Spec.Group, ".fluxcd.io") {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			fields := map[string][]string{}
			for name, p := range v.Schema.OpenAPIV3Schema.Properties.Spec.Properties {
				fields[name] = p.Enum
			}
			out[crd.Spec.Names.Kind] = fields
		}
	}
	if len(out) == 0 {
		t.Fatal("no Flux CRDs under config/crd/bases")
	}
	return out
}

// compatRow is the README table row whose first cell names kind in
// backquotes, or "" when there is none.
func compatRow(readme, first string) string {
	for _, line := range strings.Split(readme, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 2 && strings.Contains(cells[1], "`"+first+"`") {
			return line
		}
	}
	return ""
}

func TestREADMECompatibilityTableNamesEveryFluxKindFieldAndType(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	crds := fluxCRDs(t, root)
	kinds := make([]string, 0, len(crds))
	for k := range crds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		row := compatRow(readme, kind)
		if row == "" {
			t.Errorf("README.md: no compatibility row for %s", kind)
			continue
		}
		for field := range crds[kind] {
			if !strings.Contains(row, "`"+field+"`") {
				t.Errorf("README.md: the %s row does not name spec field `%s`", kind, field)
			}
		}
	}
	// Every provider and receiver type, each with its status.
	for _, c := range []struct{ kind, row string }{{"Provider", "Provider types"}, {"Receiver", "Receiver types"}} {
		row := compatRow(readme, c.row)
		if row == "" {
			t.Errorf("README.md: no row `%s`", c.row)
			continue
		}
		for _, typ := range crds[c.kind]["type"] {
			if !strings.Contains(row, "`"+typ+"`") {
				t.Errorf("README.md: the %s row does not name type `%s`", c.row, typ)
			}
		}
	}
	// A refusal names a reason that holds for every user.
	_, section, _ := strings.Cut(readme, "## Flux compatibility")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		l := strings.ToLower(line)
		if (strings.Contains(l, "refused") || strings.Contains(l, "not yet")) && !strings.Contains(l, "because") {
			t.Errorf("README.md: a compatibility row refuses without saying why (\"because …\"): %.80s", line)
		}
	}
}
