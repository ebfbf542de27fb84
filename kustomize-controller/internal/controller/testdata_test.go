package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func testdataDir(t *testing.T) string { return testenv.TestdataDir(t) }

type expectedObject = testenv.ExpectedObject

func readExpected(t *testing.T, path string) []expectedObject { return testenv.ReadExpected(t, path) }

func ensureKinds(t *testing.T, objs []expectedObject) { testenv.EnsureKinds(t, env.Client, objs) }

// TestTestdataDirectoriesApplied reconciles a Kustomization for every
// directory of the real repositories that kustomize built into
// shared/testdata/expected/*/kustomize-build, and checks that what was
// applied (the inventory, and the live objects) equals the real
// kustomize's output, as a set.
func TestTestdataDirectoriesApplied(t *testing.T) {
	var files []string
	_ = filepath.WalkDir(filepath.Join(testdataDir(t), "expected"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "expected-objects.txt" && strings.Contains(filepath.ToSlash(p), "/kustomize-build/") {
			files = append(files, p)
		}
		return nil
	})
	ns := newNamespace(t)
	sources := map[string]string{} // repo → GitRepository name
	applied, repos := 0, map[string]bool{}
	var all []expectedObject
	var selected []string
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		expected := readExpected(t, f)
		if len(expected) == 0 || strings.Contains(string(raw), "${") {
			continue // placeholders only, or names that need postBuild variables
		}
		selected = append(selected, f)
		all = append(all, expected...)
	}
	ensureKinds(t, all)
	for i, f := range selected {
		rel, _ := filepath.Rel(filepath.Join(testdataDir(t), "expected"), filepath.Dir(f))
		parts := strings.SplitN(filepath.ToSlash(rel), "/", 3)
		repoName, dir := parts[0], parts[2]
		expected := readExpected(t, f)
		t.Run(repoName+"/"+dir, func(t *testing.T) {
			src, ok := sources[repoName]
			if !ok {
				r := newRepo(t, nil)
				if err := os.CopyFS(r.Work, os.DirFS(filepath.Join(testdataDir(t), "repos", repoName))); err != nil {
					t.Fatal(err)
				}
				r.MustCommit(t, map[string]string{}, "import "+repoName)
				src = fmt.Sprintf("src-%d", len(sources))
				newSource(t, ns, src, r)
				sources[repoName] = src
			}
			// Directories that Flux applies with a targetNamespace have namespaced
			// objects without a namespace; apply them the same way, and expect
			// kustomize's namespace transformer to have moved them.
			target := ""
			for _, o := range expected {
				if o.Namespace == "" && namespaced(t, o.GVK) {
					target = fmt.Sprintf("%s-target-%d", ns, i)
				}
			}
			if target != "" {
				if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}); err != nil {
					t.Fatal(err)
				}
				for j, o := range expected {
					switch {
					case o.GVK.Kind == "Namespace" && o.GVK.Group == "":
						expected[j].Name = target
					case namespaced(t, o.GVK):
						expected[j].Namespace = target
					}
				}
			}
			k := newKustomization(t, ns, fmt.Sprintf("dir-%d", i), src, func(k *kustomizev1.Kustomization) {
				k.Spec.Path = dir
				k.Spec.TargetNamespace = target
				k.Spec.Prune = false // directories share objects; deletion orphans them
			})
			// home-ops' alertmanager Alert watches kind FluxInstance, which
			// upstream Flux's Alert CRD (and so Eddy's) does not accept; only
			// flux-operator's patched CRD does. Flux refuses the whole set.
			refused := func(c *metav1.Condition) bool {
				return c.Status == metav1.ConditionFalse && strings.Contains(c.Message, `Alert.notification.toolkit.fluxcd.io "alertmanager" is invalid: spec.eventSources[0].kind: Unsupported value: "FluxInstance"`)
			}
			waitFor(t, k, "Ready", func() bool {
				c := readyCond(k)
				return c != nil && c.ObservedGeneration == k.Generation && (c.Status == metav1.ConditionTrue || refused(c))
			})
			if c := readyCond(k); refused(c) {
				if k.Status.Inventory != nil {
					t.Errorf("a refused set left an inventory: %v", k.Status.Inventory.Entries)
				}
				t.Logf("refused as upstream Flux refuses it: %s", c.Message)
				if err := env.Client.Delete(context.Background(), k); err != nil {
					t.Fatal(err)
				}
				return
			}
			var got, want []string
			for _, e := range k.Status.Inventory.Entries {
				got = append(got, e.ID)
			}
			for _, o := range expected {
				want = append(want, o.ID())
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("applied inventory differs from kustomize's output\n got %v\nwant %v", got, want)
			}
			applied++
			repos[repoName] = true
			if err := env.Client.Delete(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		})
	}
	if applied < 10 || len(repos) < 3 {
		t.Errorf("applied %d directories from %d repositories; want at least 10 from 3", applied, len(repos))
	}
	t.Logf("applied %d directories from %d repositories", applied, len(repos))
}

func namespaced(t *testing.T, gvk schema.GroupVersionKind) bool {
	t.Helper()
	m, err := env.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	return m.Scope.Name() == "namespace"
}
