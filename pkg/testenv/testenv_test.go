package testenv_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// fluxKinds are the kinds this test creates from the testdata repositories.
var fluxKinds = map[string]bool{
	"source.toolkit.fluxcd.io/v1 GitRepository":    true,
	"kustomize.toolkit.fluxcd.io/v1 Kustomization": true,
}

// testdataRepos finds ../shared/testdata/repos beside the checkout, or
// $EDDY_SHARED_DIR/testdata/repos.
func testdataRepos(t *testing.T) string { return filepath.Join(testenv.TestdataDir(t), "repos") }

type fluxDoc struct {
	file string // relative to the repos directory
	obj  *unstructured.Unstructured
}

// patchFragments returns the files that some kustomization.yaml merges into
// other objects as patches: they are partial objects, not objects of their own.
func patchFragments(t *testing.T, root string) map[string]bool {
	t.Helper()
	frags := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var k struct {
			Patches []struct {
				Path string `json:"path"`
			} `json:"patches"`
			PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			return nil // not every kustomization.yaml here is kustomize's
		}
		paths := k.PatchesStrategicMerge
		for _, p := range k.Patches {
			paths = append(paths, p.Path)
		}
		for _, p := range paths {
			if p != "" {
				frags[filepath.Join(filepath.Dir(path), p)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return frags
}

// readFluxDocs walks root and decodes every GitRepository and Kustomization
// of the Flux v1 APIs found in *.yaml / *.yml files.
func readFluxDocs(t *testing.T, root string) (docs []fluxDoc, skipped []string) {
	t.Helper()
	frags := patchFragments(t, root)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		raws, err := testenv.YAMLDocuments(data)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, raw := range raws {
			var m map[string]any
			if err := yaml.Unmarshal(raw, &m); err != nil || m == nil {
				if bytes.Contains(raw, []byte("toolkit.fluxcd.io/v1")) {
					t.Errorf("%s: cannot parse a document that names a Flux API: %v", rel, err)
				}
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if !fluxKinds[u.GetAPIVersion()+" "+u.GetKind()] {
				continue
			}
			if frags[path] {
				skipped = append(skipped, rel)
				continue
			}
			docs = append(docs, fluxDoc{file: rel, obj: u})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs, skipped
}

func ensureNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// subset reports the first path at which want has a value that got lacks or differs in.
func subset(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range w {
			if d := subset(v, g[k], path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path
		}
		for i := range w {
			if d := subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(want, got) {
			return path
		}
		return ""
	}
}

// TestTestdataFluxObjectsAccepted creates every GitRepository and
// Kustomization of the real repositories in shared/testdata, as written in
// their files, with strict field validation, then reads each back: nothing
// the file says may be lost or changed, and the schema defaults are filled in.
func TestTestdataFluxObjectsAccepted(t *testing.T) {
	ctx := context.Background()
	docs, skipped := readFluxDocs(t, testdataRepos(t))
	if len(docs) < 20 {
		t.Fatalf("found only %d Flux objects in the testdata repositories; expected many more", len(docs))
	}
	t.Logf("creating %d GitRepository/Kustomization objects; skipped patch fragments: %v", len(docs), skipped)
	counts := map[string]int{}
	for _, d := range docs {
		obj := d.obj.DeepCopy()
		if obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		label := fmt.Sprintf("%s %s/%s (%s)", obj.GetKind(), obj.GetNamespace(), obj.GetName(), d.file)
		ensureNamespace(t, ctx, obj.GetNamespace())
		if err := env.Client.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s rejected: %v", label, err)
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if p := subset(d.obj.Object["spec"], got.Object["spec"], "spec"); p != "" {
			t.Errorf("%s: read back differs from the file at %s", label, p)
		}
		if og, found, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); !found || og != -1 {
			t.Errorf("%s: status.observedGeneration = %d (found %v), want default -1", label, og, found)
		}
		if obj.GetKind() == "GitRepository" {
			want := "60s"
			if to, ok, _ := unstructured.NestedString(d.obj.Object, "spec", "timeout"); ok {
				want = to
			}
			if to, _, _ := unstructured.NestedString(got.Object, "spec", "timeout"); to != want {
				t.Errorf("%s: spec.timeout = %q, want %q", label, to, want)
			}
		}
		counts[obj.GetKind()]++
		if err := env.Client.Delete(ctx, got); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
	}
	t.Logf("accepted: %v", counts)
	if counts["GitRepository"] == 0 || counts["Kustomization"] == 0 {
		t.Errorf("want both kinds among the testdata objects, got %v", counts)
	}
}

// TestSchemaRejectsInvalidSpecs checks that the API server, through the
// generated schema, refuses invalid objects with an error naming the field.
func TestSchemaRejectsInvalidSpecs(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, ctx, "schema-negative")
	gitrepo := func(spec string) string {
		return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: neg, namespace: schema-negative}\nspec:\n" + spec
	}
	ks := func(spec string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: neg, namespace: schema-negative}\nspec:\n" + spec
	}
	const source = "  sourceRef: {kind: GitRepository, name: repo}\n"
	cases := []struct {
		name, yaml, field string
	}{
		{"interval 1x", gitrepo("  url: https://example.com/repo\n  interval: 1x\n"), "spec.interval"},
		{"ftp url", gitrepo("  url: ftp://example.com/repo\n  interval: 1m\n"), "spec.url"},
		{"gitrepository without url", gitrepo("  interval: 1m\n"), "spec.url"},
		{"timeout in hours", gitrepo("  url: https://example.com/repo\n  interval: 1m\n  timeout: 1h\n"), "spec.timeout"},
		{"unknown provider", gitrepo("  url: https://example.com/repo\n  interval: 1m\n  provider: gitlab\n"), "spec.provider"},
		{"serviceAccountName without cloud provider", gitrepo("  url: https://example.com/repo\n  interval: 1m\n  serviceAccountName: sa\n"), "serviceAccountName can only be set"},
		{"kustomization interval 1x", ks("  interval: 1x\n  prune: true\n" + source), "spec.interval"},
		{"kustomization without sourceRef", ks("  interval: 10m\n  prune: true\n"), "spec.sourceRef"},
		{"kustomization without prune", ks("  interval: 10m\n" + source), "spec.prune"},
		{"sourceRef kind HelmRepository", ks("  interval: 10m\n  prune: true\n  sourceRef: {kind: HelmRepository, name: repo}\n"), "spec.sourceRef.kind"},
		{"deletionPolicy Keep", ks("  interval: 10m\n  prune: true\n  deletionPolicy: Keep\n" + source), "spec.deletionPolicy"},
		{"targetNamespace too long", ks("  interval: 10m\n  prune: true\n  targetNamespace: " + strings.Repeat("a", 64) + "\n" + source), "spec.targetNamespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.yaml), &obj.Object); err != nil {
				t.Fatal(err)
			}
			err := env.Client.Create(ctx, obj)
			if err == nil {
				_ = env.Client.Delete(ctx, obj)
				t.Fatalf("accepted; want a schema error naming %s", tc.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v; want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

// TestCRDNamesAndColumns checks the parts of the CRDs that clients such as
// kubectl and the flux CLI rely on.
func TestCRDNamesAndColumns(t *testing.T) {
	want := map[string]struct {
		short, category string
	}{
		"gitrepositories.source.toolkit.fluxcd.io":   {"gitrepo", "fluxcd-sources"},
		"kustomizations.kustomize.toolkit.fluxcd.io": {"ks", "fluxcd-appliers"},
	}
	for _, crd := range env.CRDs {
		// Flux compatible (kustomize-controller v1.9.2, every v2.10 CRD): a
		// Kustomization applying Eddy's CRDs leaves their ${...} unsubstituted.
		// Argo CD's CRDs are as Argo CD ships them, without it (and no ${).
		if strings.HasSuffix(crd.Spec.Group, ".toolkit.fluxcd.io") && crd.Annotations["kustomize.toolkit.fluxcd.io/substitute"] != "disabled" {
			t.Errorf("%s lacks annotation kustomize.toolkit.fluxcd.io/substitute: disabled", crd.Name)
		}
		w, ok := want[crd.Name]
		if !ok {
			continue
		}
		delete(want, crd.Name)
		if !reflect.DeepEqual(crd.Spec.Names.ShortNames, []string{w.short}) {
			t.Errorf("%s short names %v, want [%s]", crd.Name, crd.Spec.Names.ShortNames, w.short)
		}
		if !contains(crd.Spec.Names.Categories, "fluxcd") || !contains(crd.Spec.Names.Categories, w.category) {
			t.Errorf("%s categories %v, want fluxcd and %s", crd.Name, crd.Spec.Names.Categories, w.category)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" || !crd.Spec.Versions[0].Served || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: want exactly one served and stored version v1", crd.Name)
			continue
		}
		var cols []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			cols = append(cols, c.Name)
		}
		if !contains(cols, "Ready") || !contains(cols, "Status") || !contains(cols, "Age") {
			t.Errorf("%s printer columns %v, want Age, Ready and Status", crd.Name, cols)
		}
	}
	if len(want) != 0 {
		t.Errorf("CRDs not installed: %v", want)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
