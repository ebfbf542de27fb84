package main

import (
	"bytes"
	"context"
	"errors"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/ui"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestCreateFlagParsing: flux's forms of --source, --path and --health-check.
func TestCreateFlagParsing(t *testing.T) {
	for in, want := range map[string][3]string{
		"podinfo":                        {"", "podinfo", ""},
		"GitRepository/podinfo":          {"GitRepository", "podinfo", ""},
		"HelmRepository/podinfo.flux":    {"HelmRepository", "podinfo", "flux"},
		"Kustomization/a.b.c":            {"Kustomization", "a.b", "c"},
		"GitRepository/*":                {"GitRepository", "*", ""},
		"helmrepository/bitnami.default": {"helmrepository", "bitnami", "default"},
	} {
		k, n, ns := kindNameNamespace(in)
		if [3]string{k, n, ns} != want {
			t.Errorf("kindNameNamespace(%q) = %q, %q, %q; want %q", in, k, n, ns, want)
		}
	}
	for in, want := range map[string]string{"./": "./", "": "./", ".": "./", "./apps/../x": "./x", "../../etc": "./etc", "apps/": "./apps", " ./a/b ": "./a/b"} {
		if got := safeRelativePath(in); got != want {
			t.Errorf("safeRelativePath(%q) = %q; want %q", in, got, want)
		}
	}
	if ref, err := healthCheck("HelmRelease/podinfo.apps"); err != nil || ref.APIVersion != "helm.toolkit.fluxcd.io/v2" || ref.Name != "podinfo" || ref.Namespace != "apps" {
		t.Errorf("healthCheck(HelmRelease/podinfo.apps) = %+v, %v", ref, err)
	}
	for _, bad := range []string{"Deployment/podinfo", "Service/a.b", "podinfo.apps"} {
		if _, err := healthCheck(bad); err == nil {
			t.Errorf("healthCheck(%q) accepted", bad)
		}
	}
}

// TestPrintAll: `get all` prints a table per kind with objects, names
// prefixed with the kind; a kind whose CRD is missing is left out without
// a word, another list error is one failure line and the rest still print.
func TestPrintAll(t *testing.T) {
	objs := []client.Object{
		&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps"}},
		&notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "slack"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			switch l.(type) {
			case *notificationv1.AlertList:
				return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: notificationv1.GroupVersion.Group, Kind: "Alert"}}
			case *notificationv1.ReceiverList:
				return errors.New("receivers are forbidden")
			}
			return c.List(ctx, l, opts...)
		},
	}).Build()
	var out, errOut bytes.Buffer
	if err := printAll(context.Background(), c, &out, ui.New(&errOut), kinds.Flux, false, false, client.InNamespace("flux-system")); err != nil {
		t.Fatal(err)
	}
	want := "NAME                 REVISION   SUSPENDED   READY   MESSAGE\n" +
		"kustomization/apps              False       False   waiting to be reconciled\n\n" +
		"NAME             READY   MESSAGE\n" +
		"provider/slack   True    Provider is Ready\n\n"
	if out.String() != want {
		t.Errorf("get all printed:\n%q\nwant:\n%q", out.String(), want)
	}
	if got := errOut.String(); got != "✗ receivers are forbidden\n" {
		t.Errorf("get all's errors: %q; want only the Receivers' one", got)
	}
}

// TestPrintAllWide: -o wide adds SHARD before MESSAGE, the value of each
// object's sharding.fluxcd.io/key label, empty without one.
func TestPrintAllWide(t *testing.T) {
	objs := []client.Object{
		&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "apps", Labels: map[string]string{"sharding.fluxcd.io/key": "shard2"}}},
		&kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "infra"}},
		&notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "slack", Labels: map[string]string{"sharding.fluxcd.io/key": "a"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	var out, errOut bytes.Buffer
	if err := printAll(context.Background(), c, &out, ui.New(&errOut), kinds.Flux, true, true); err != nil {
		t.Fatal(err)
	}
	want := "NAMESPACE     NAME                  REVISION   SUSPENDED   READY   SHARD    MESSAGE\n" +
		"flux-system   kustomization/apps               False       False   shard2   waiting to be reconciled\n" +
		"flux-system   kustomization/infra              False       False            waiting to be reconciled\n\n" +
		"NAMESPACE     NAME             READY   SHARD   MESSAGE\n" +
		"flux-system   provider/slack   True    a       Provider is Ready\n\n"
	if out.String() != want || errOut.Len() > 0 {
		t.Errorf("get all -o wide printed:\n%s\n%q\nwant:\n%q\n(errors %q)", out.String(), out.String(), want, errOut.String())
	}
}

// get all leaves out the source objects application-controller creates for
// its Applications (label eddy.dev/application-source): failed ones from a
// typo'd repoURL would read as the user's broken Flux sources.
func TestPrintAllHidesApplicationSources(t *testing.T) {
	objs := []client.Object{
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "app-src-0a1b2c3d",
			Labels: map[string]string{kinds.ApplicationSourceLabel: "true"}}},
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	var out, errOut bytes.Buffer
	if err := printAll(context.Background(), c, &out, ui.New(&errOut), kinds.Flux, true, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "app-src-") || !strings.Contains(out.String(), "gitrepository/flux-system") {
		t.Errorf("get all -A printed:\n%s", out.String())
	}
}
