package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/crds"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func testdataDir(t *testing.T) string { return testenv.TestdataDir(t) }

type expectedObject struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func (e expectedObject) id() string {
	return fmt.Sprintf("%s_%s_%s_%s", e.namespace, strings.ReplaceAll(e.name, ":", "__"), e.gvk.Group, e.gvk.Kind)
}

func readExpected(t *testing.T, path string) []expectedObject {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []expectedObject
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		ns, name, _ := strings.Cut(f[2], "/")
		gv, err := schema.ParseGroupVersion(f[0])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, expectedObject{gvk: gv.WithKind(f[1]), namespace: ns, name: name})
	}
	return out
}

// ensureKinds installs a schemaless CRD for each kind the cluster does not
// serve (HelmRelease, HelmRepository, policies...), with every version the
// objects use, so the real objects of the testdata repositories can be
// applied without their controllers; and creates the namespaces they name.
func ensureKinds(t *testing.T, objs []expectedObject) {
	t.Helper()
	ctx := context.Background()
	type kindInfo struct {
		versions   []string
		namespaced bool
	}
	kinds := map[schema.GroupKind]*kindInfo{}
	for _, o := range objs {
		if _, err := env.Client.RESTMapper().RESTMapping(o.gvk.GroupKind(), o.gvk.Version); err == nil {
			continue
		}
		k := kinds[o.gvk.GroupKind()]
		if k == nil {
			k = &kindInfo{}
			kinds[o.gvk.GroupKind()] = k
		}
		if !slices.Contains(k.versions, o.gvk.Version) {
			k.versions = append(k.versions, o.gvk.Version)
		}
		// Scope is unknown without the real CRD: kinds named Cluster* are
		// cluster-scoped, as their projects define them; the rest namespaced.
		k.namespaced = !strings.HasPrefix(o.gvk.Kind, "Cluster")
	}
	var stubs []*apiextensionsv1.CustomResourceDefinition
	preserve := true
	// A kind whose CRD is installed (Eddy's) but not at an older version a
	// repository still writes (HelmRelease v2beta2, HelmRepository
	// v1beta2) gets that version added, served and schemaless: a separate
	// stub CRD of the kind would replace the installed one.
	installed := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := env.Client.List(ctx, installed); err != nil {
		t.Fatal(err)
	}
	for i := range installed.Items {
		crd := &installed.Items[i]
		info := kinds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}]
		if info == nil {
			continue
		}
		delete(kinds, schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind})
		for _, v := range info.versions {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}})
		}
		crd.ResourceVersion = "" // crds.Install creates, then updates what exists
		stubs = append(stubs, crd)
	}
	for gk, info := range kinds {
		plural := strings.ToLower(gk.Kind) + "s"
		scope := apiextensionsv1.ClusterScoped
		if info.namespaced {
			scope = apiextensionsv1.NamespaceScoped
		}
		sort.Strings(info.versions)
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gk.Group,
				Annotations: map[string]string{"api-approved.kubernetes.io": "unapproved, test stub"}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: gk.Group, Scope: scope,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gk.Kind, Plural: plural, ListKind: gk.Kind + "List"},
			},
		}
		for i, v := range info.versions {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}})
		}
		stubs = append(stubs, crd)
	}
	if len(stubs) > 0 {
		if err := crds.Install(ctx, env.Client, stubs); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if o.namespace == "" {
			continue
		}
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

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
				if o.namespace == "" && namespaced(t, o.gvk) {
					target = fmt.Sprintf("%s-target-%d", ns, i)
				}
			}
			if target != "" {
				if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}); err != nil {
					t.Fatal(err)
				}
				for j, o := range expected {
					switch {
					case o.gvk.Kind == "Namespace" && o.gvk.Group == "":
						expected[j].name = target
					case namespaced(t, o.gvk):
						expected[j].namespace = target
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
				want = append(want, o.id())
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
