package testenv

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/crds"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExpectedObject is one line of an expected-objects.txt of the shared
// testdata: `<apiVersion> <Kind> <namespace>/<name>`.
type ExpectedObject struct {
	GVK       schema.GroupVersionKind
	Namespace string // "" for none
	Name      string
}

// ID is the object's inventory id (Flux's `<ns>_<name>_<group>_<Kind>`).
func (e ExpectedObject) ID() string {
	return fmt.Sprintf("%s_%s_%s_%s", e.Namespace, strings.ReplaceAll(e.Name, ":", "__"), e.GVK.Group, e.GVK.Kind)
}

// ReadExpected reads an expected-objects.txt (lines of other shapes are
// skipped); a read or parse error fails t.
func ReadExpected(t testing.TB, path string) []ExpectedObject {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []ExpectedObject
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
		out = append(out, ExpectedObject{GVK: gv.WithKind(f[1]), Namespace: ns, Name: name})
	}
	return out
}

// EnsureKinds installs a schemaless CRD for each kind the cluster does not
// serve (HelmRelease, HelmRepository, policies...), with every version the
// objects use, so the real objects of the testdata repositories can be
// applied without their controllers; and creates the namespaces they name.
func EnsureKinds(t testing.TB, c client.Client, objs []ExpectedObject) {
	t.Helper()
	ctx := context.Background()
	type kindInfo struct {
		versions   []string
		namespaced bool
	}
	kinds := map[schema.GroupKind]*kindInfo{}
	for _, o := range objs {
		if _, err := c.RESTMapper().RESTMapping(o.GVK.GroupKind(), o.GVK.Version); err == nil {
			continue
		}
		k := kinds[o.GVK.GroupKind()]
		if k == nil {
			k = &kindInfo{}
			kinds[o.GVK.GroupKind()] = k
		}
		if !slices.Contains(k.versions, o.GVK.Version) {
			k.versions = append(k.versions, o.GVK.Version)
		}
		// Scope is unknown without the real CRD: kinds named Cluster* are
		// cluster-scoped, as their projects define them; the rest namespaced.
		k.namespaced = !strings.HasPrefix(o.GVK.Kind, "Cluster")
	}
	var stubs []*apiextensionsv1.CustomResourceDefinition
	preserve := true
	// A kind whose CRD is installed (Eddy's) but not at an older version a
	// repository still writes (HelmRelease v2beta2, HelmRepository
	// v1beta2) gets that version added, served and schemaless: a separate
	// stub CRD of the kind would replace the installed one.
	installed := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, installed); err != nil {
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
		if err := crds.Install(ctx, c, stubs); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if o.Namespace == "" {
			continue
		}
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
