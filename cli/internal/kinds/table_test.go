package kinds

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withoutRow are the kinds of the command's scheme, in the Flux and Argo
// CD groups, that have no row, each with the reason.
var withoutRow = map[schema.GroupKind]string{
	{Group: argov1.GroupVersion.Group, Kind: argov1.AppProjectKind}:           "no command lists AppProjects: application-controller reads them, `eddy app` names an Application's project only",
	{Group: sourcev1.GroupVersion.Group, Kind: sourcev1.ExternalArtifactKind}: "a third-party controller writes ExternalArtifacts; a row would add reconcile/suspend commands flux has not",
}

// TestEveryKindOfTheSchemeHasARow: every kind the command's scheme knows
// in Flux's groups (*.toolkit.fluxcd.io) and Argo CD's (argoproj.io) has
// its row, at any registered version, unless withoutRow says why not: a
// kind added to the API and the scheme without a row fails here.
func TestEveryKindOfTheSchemeHasARow(t *testing.T) {
	seen := 0
	for gvk, typ := range scheme.New().AllKnownTypes() {
		fluxOrArgo := strings.HasSuffix(gvk.Group, ".toolkit.fluxcd.io") || gvk.Group == argov1.GroupVersion.Group
		if !fluxOrArgo || strings.HasSuffix(gvk.Kind, "List") || !strings.HasPrefix(typ.PkgPath(), "github.com/eddyops/eddy/api/") {
			continue
		}
		seen++
		if _, ok := ByGroupKind(gvk.GroupKind()); !ok && withoutRow[gvk.GroupKind()] == "" {
			t.Errorf("%s is in the command's scheme without a row in All", gvk)
		}
	}
	if seen == 0 {
		t.Fatal("no Flux or Argo CD kind in the scheme")
	}
}

// TestEveryRowIsItsKindInTheScheme: a row's New and NewList are the Go
// types the scheme registers for its kind at its GroupVersion (so a row
// cannot name one kind and build another), and New's type has the shared
// accessors (Object) by the type of New.
func TestEveryRowIsItsKindInTheScheme(t *testing.T) {
	s := scheme.New()
	for _, k := range All {
		if typ, ok := s.AllKnownTypes()[k.GVK()]; !ok || reflect.TypeOf(k.New()).Elem() != typ {
			t.Errorf("%s: New() is %T; the scheme has %v", k.GVK(), k.New(), typ)
		}
		list := k.GroupVersion.WithKind(k.Kind + "List")
		if typ, ok := s.AllKnownTypes()[list]; !ok || reflect.TypeOf(k.NewList()).Elem() != typ {
			t.Errorf("%s: NewList() is %T; the scheme has %v", list, k.NewList(), typ)
		}
		if _, ok := withoutRow[k.GVK().GroupKind()]; ok {
			t.Errorf("%s has a row and is listed in withoutRow", k.Kind)
		}
	}
}

// TestFluxAreTheRowsNotOfArgoCD: the Flux commands' kinds are All less
// Argo CD's, in All's order.
func TestFluxAreTheRowsNotOfArgoCD(t *testing.T) {
	var want []string
	for _, k := range All {
		if !k.ArgoCD {
			want = append(want, k.Kind)
		}
	}
	var got []string
	for _, k := range Flux {
		got = append(got, k.Kind)
	}
	if !slices.Equal(got, want) || slices.Contains(got, argov1.ApplicationKind) {
		t.Errorf("Flux = %v; want %v", got, want)
	}
}

// TestAppliersAndSourcesReadTheirRevisions: every source and applier
// tells the revision it last attempted, and an applier's source kinds are
// source rows.
func TestAppliersAndSourcesReadTheirRevisions(t *testing.T) {
	for _, k := range All {
		if (k.Source || k.Applier) && (k.Attempted == nil || k.Revision == nil) {
			t.Errorf("%s: a source or applier without Attempted or Revision", k.Kind)
		}
		if k.Applier && len(k.SourceKinds) == 0 {
			t.Errorf("%s: an applier without SourceKinds", k.Kind)
		}
		for _, sk := range k.SourceKinds {
			if r, ok := ByKind(sk); !ok || !r.Source {
				t.Errorf("%s: source kind %s is no source row", k.Kind, sk)
			}
		}
	}
}

// TestKustomizationSourceKindsAreWhatKustomizeControllerServes: the
// kinds `create kustomization` and `reconcile ks --with-source` accept
// are those kustomize-controller reads a Kustomization's source from.
func TestKustomizationSourceKindsAreWhatKustomizeControllerServes(t *testing.T) {
	row := mustKind(t, kustomizev1.KustomizationKind)
	for _, k := range All {
		ks := &kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: k.Kind, Name: "s"}}}
		_, _, _, served := kustomize.SourceOf(ks)
		if accepted := slices.Contains(row.SourceKinds, k.Kind); accepted != served {
			t.Errorf("%s: accepted by the command %v, served by kustomize-controller %v", k.Kind, accepted, served)
		}
	}
}

// TestCredentialsAreTheSourcesSecretRef: `export --with-credentials`
// finds the Secret a Git, OCI or Helm repository or a Bucket names.
func TestCredentialsAreTheSourcesSecretRef(t *testing.T) {
	git := &sourcev1.GitRepository{}
	if got := mustKind(t, sourcev1.GitRepositoryKind).Credentials(git); got != "" {
		t.Errorf("no secretRef: %q", got)
	}
	git.Spec.SecretRef = &meta.LocalObjectReference{Name: "auth"}
	if got := mustKind(t, sourcev1.GitRepositoryKind).Credentials(git); got != "auth" {
		t.Errorf("secretRef auth: %q", got)
	}
	for _, k := range All {
		if want := k.Kind == sourcev1.GitRepositoryKind || k.Kind == sourcev1.OCIRepositoryKind || k.Kind == sourcev1.HelmRepositoryKind ||
			k.Kind == sourcev1.BucketKind; (k.Credentials != nil) != want {
			t.Errorf("%s: Credentials set %v; want %v", k.Kind, k.Credentials != nil, want)
		}
	}
}
