package kustomize

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

func testdata(t *testing.T) string { return testenv.TestdataDir(t) }

// repoTree reads a testdata repository as the controller holds an
// artifact: an in-memory Tree.
func repoTree(t *testing.T, repo string) *Tree {
	t.Helper()
	tree, err := ReadDirTree(filepath.Join(testdata(t), "repos", repo))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func objectLines(objs []*unstructured.Unstructured) []string {
	var lines []string
	for _, u := range objs {
		lines = append(lines, fmt.Sprintf("%s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()))
	}
	sort.Strings(lines)
	return lines
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// TestKustomizeBuildMatchesKustomize builds every directory that the real
// kustomize built into shared/testdata/expected/*/kustomize-build and
// compares the objects, as a set.
func TestKustomizeBuildMatchesKustomize(t *testing.T) {
	var files []string
	_ = filepath.WalkDir(filepath.Join(testdata(t), "expected"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "expected-objects.txt" && strings.Contains(filepath.ToSlash(p), "/kustomize-build/") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 10 {
		t.Fatalf("found %d expected kustomize builds, want at least 10", len(files))
	}
	repos := map[string]bool{}
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Join(testdata(t), "expected"), filepath.Dir(f))
		parts := strings.SplitN(filepath.ToSlash(rel), "/", 3) // <repo>/kustomize-build/<dir>
		repo, dir := parts[0], parts[2]
		repos[repo] = true
		t.Run(repo+"/"+dir, func(t *testing.T) {
			res, err := Build(repoTree(t, repo), Options{Path: dir})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := objectLines(res.Objects), readLines(t, f); !reflect.DeepEqual(got, want) {
				t.Errorf("objects differ from kustomize's\n got %v\nwant %v", got, want)
			}
		})
	}
	t.Logf("%d directories across %d repositories", len(files), len(repos))
}

var treeLine = regexp.MustCompile(`^\s*(\S+)/(\S+)\s+source=(\S+)/(\S+)/(\S+)\s+path=(\S+)`)

// fluxKustomization finds the Kustomization ns/name among the objects that
// the emulated parent builds produced (the expected-build.yaml files beside).
func fluxKustomization(t *testing.T, rootDir, ns, name string) *kustomizev1.Kustomization {
	t.Helper()
	builds, _ := filepath.Glob(filepath.Join(rootDir, "*", "expected-build.yaml"))
	for _, b := range builds {
		data, _ := os.ReadFile(b)
		docs, err := testenv.YAMLDocuments(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range docs {
			var k kustomizev1.Kustomization
			if yaml.Unmarshal(doc, &k) != nil || k.Kind != "Kustomization" || k.APIVersion != "kustomize.toolkit.fluxcd.io/v1" {
				continue
			}
			if k.Name == name && k.Namespace == ns {
				return &k
			}
		}
	}
	return nil
}

// substituteFromFixture stands for the cluster's ConfigMaps and Secrets
// that spec.postBuild.substituteFrom names ("<Kind>/<name>" → data), with
// the values the emulated trees were built with. No tree of the testdata
// names one today; a tree that does fails until its data is added here.
var substituteFromFixture = map[string]map[string]string{}

// postBuildVars merges the variables of substituteFrom (read from
// substituteFromFixture, in order, later overriding earlier) and
// substitute over all, as the controller does. A reference the fixture
// lacks fails the test unless it is optional.
func postBuildVars(t *testing.T, pb *kustomizev1.PostBuild) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, ref := range pb.SubstituteFrom {
		data, ok := substituteFromFixture[ref.Kind+"/"+ref.Name]
		if !ok && !ref.Optional {
			t.Fatalf("substituteFrom %s/%s: add it to substituteFromFixture", ref.Kind, ref.Name)
		}
		maps.Copy(vars, data)
	}
	maps.Copy(vars, pb.Substitute)
	return vars
}

// TestFluxKustomizationsMatchEmulator builds each Kustomization of the
// emulated Flux trees in shared/testdata/expected/*/flux with its spec
// overlays (path, targetNamespace, patches, images, components, prefix and
// suffix, inline postBuild variables, commonMetadata), and compares the
// objects and, where generated, the kustomization.yaml's resources.
func TestFluxKustomizationsMatchEmulator(t *testing.T) {
	trees, _ := filepath.Glob(filepath.Join(testdata(t), "expected", "*", "flux", "*", "tree.txt"))
	checked, generated := 0, 0
	for _, tree := range trees {
		rootDir := filepath.Dir(tree)
		rel, _ := filepath.Rel(filepath.Join(testdata(t), "expected"), rootDir)
		repo := strings.Split(filepath.ToSlash(rel), "/")[0]
		data, _ := os.ReadFile(tree)
		for _, line := range strings.Split(string(data), "\n") {
			m := treeLine.FindStringSubmatch(line)
			if m == nil || strings.Contains(line, "not followed") || m[3] != "GitRepository" {
				continue
			}
			ns, name, path := m[1], m[2], m[6]
			dir := filepath.Join(rootDir, ns+"."+name)
			if _, err := os.Stat(filepath.Join(dir, "expected-objects.txt")); err != nil {
				continue
			}
			t.Run(rel+"/"+ns+"."+name, func(t *testing.T) {
				opts := Options{Path: path}
				if k := fluxKustomization(t, rootDir, ns, name); k != nil {
					s := k.Spec
					opts = Options{Path: s.Path, TargetNamespace: s.TargetNamespace, NamePrefix: s.NamePrefix, NameSuffix: s.NameSuffix,
						Patches: s.Patches, Images: s.Images, Components: s.Components, IgnoreMissingComponents: s.IgnoreMissingComponents,
						CommonMetadata: s.CommonMetadata}
					if s.PostBuild != nil {
						opts.PostBuild, opts.Vars, opts.Strategy = true, postBuildVars(t, s.PostBuild), s.PostBuild.SubstituteStrategy
					}
				} else if name != "flux-system" {
					t.Fatalf("Kustomization %s/%s not found in the parent builds", ns, name)
				}
				res, err := Build(repoTree(t, repo), opts)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := objectLines(res.Objects), readLines(t, filepath.Join(dir, "expected-objects.txt")); !reflect.DeepEqual(got, want) {
					t.Errorf("objects differ from the emulator's\n got %v\nwant %v", got, want)
				}
				eff, _ := os.ReadFile(filepath.Join(dir, "effective-kustomization.yaml"))
				if bytes.HasPrefix(eff, []byte("# generated")) != res.Generated {
					t.Errorf("generated=%v, but the emulator says %q", res.Generated, firstLine(eff))
				}
				if res.Generated {
					generated++
					var want kustypes.Kustomization
					if err := yaml.Unmarshal(eff, &want); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(res.Kustomization.Resources, want.Resources) {
						t.Errorf("generated resources\n got %v\nwant %v", res.Kustomization.Resources, want.Resources)
					}
				}
				checked++
			})
		}
	}
	if checked < 20 || generated == 0 {
		t.Errorf("checked %d Kustomizations (%d generated); expected more", checked, generated)
	}
	t.Logf("checked %d Kustomizations, %d with a generated kustomization.yaml", checked, generated)
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
