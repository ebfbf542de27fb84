package render

import (
	"slices"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.0
`

func TestKustomizeOverrides(t *testing.T) {
	root := repo(t, map[string]string{
		"base/kustomization.yaml":         "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":                deployment,
		"overlay/kustomization.yaml":      "resources:\n- ../base\ncommonLabels:\n  team: a\n",
		"overlay/comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations:\n  from-component: \"yes\"\n",
		"overlay/patch.yaml":              "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      serviceAccountName: patched\n",
	})
	tests := []struct {
		name    string
		o       argov1.ApplicationSourceKustomize
		check   func(t *testing.T, d *unstructured.Unstructured)
		wantErr string
	}{
		{name: "prefix, suffix, namespace, images and replicas",
			o: argov1.ApplicationSourceKustomize{NamePrefix: "p-", NameSuffix: "-s", Namespace: "ns",
				Images:   []string{"nginx=registry.local/nginx:$ARGOCD_APP_REVISION_SHORT"},
				Replicas: []argov1.KustomizeReplica{{Name: "web", Count: intstr.FromString("3")}}},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if d.GetName() != "p-web-s" || d.GetNamespace() != "ns" {
					t.Errorf("name %s/%s", d.GetNamespace(), d.GetName())
				}
				if got := field(t, d, "spec", "replicas"); got != "3" {
					t.Errorf("replicas %s", got)
				}
				if got := containerImage(d); got != "registry.local/nginx:0123456" {
					t.Errorf("image %s", got)
				}
			}},
		{name: "labels with selectors, annotations expanded only when asked",
			o: argov1.ApplicationSourceKustomize{CommonLabels: map[string]string{"rev": "$ARGOCD_APP_NAME"},
				CommonAnnotations: map[string]string{"by": "$ARGOCD_APP_NAME", "raw": "$ARGOCD_APP_NAME"}},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if got := d.GetLabels()["rev"]; got != "app" {
					t.Errorf("label rev = %q", got)
				}
				if got := field(t, d, "spec", "selector", "matchLabels", "rev"); got != "app" {
					t.Errorf("selector rev = %q", got)
				}
				if got := d.GetAnnotations()["by"]; got != "$ARGOCD_APP_NAME" {
					t.Errorf("annotation by = %q (expanded without commonAnnotationsEnvsubst)", got)
				}
			}},
		{name: "commonAnnotationsEnvsubst expands",
			o: argov1.ApplicationSourceKustomize{CommonAnnotations: map[string]string{"by": "${ARGOCD_APP_NAME}-$$x"}, CommonAnnotationsEnvsubst: true},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if got := d.GetAnnotations()["by"]; got != "app-$x" {
					t.Errorf("annotation by = %q", got)
				}
			}},
		{name: "labelWithoutSelector leaves the selector",
			o: argov1.ApplicationSourceKustomize{CommonLabels: map[string]string{"extra": "x"}, LabelWithoutSelector: true},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if d.GetLabels()["extra"] != "x" {
					t.Errorf("labels %v", d.GetLabels())
				}
				if got := field(t, d, "spec", "selector", "matchLabels", "extra"); got != "" {
					t.Errorf("selector has extra=%s", got)
				}
				if got := field(t, d, "spec", "template", "metadata", "labels", "extra"); got != "" {
					t.Errorf("template has extra=%s without labelIncludeTemplates", got)
				}
			}},
		{name: "an existing label needs forceCommonLabels",
			o: argov1.ApplicationSourceKustomize{CommonLabels: map[string]string{"team": "b"}}, wantErr: "label 'team' already in kustomization file"},
		{name: "forceCommonLabels overwrites",
			o: argov1.ApplicationSourceKustomize{CommonLabels: map[string]string{"team": "b"}, ForceCommonLabels: true},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if d.GetLabels()["team"] != "b" {
					t.Errorf("labels %v", d.GetLabels())
				}
			}},
		{name: "patches and components",
			o: argov1.ApplicationSourceKustomize{
				Patches:    []argov1.KustomizePatch{{Path: "patch.yaml", Target: &argov1.KustomizeSelector{Kind: "Deployment"}}},
				Components: []string{"comp", "absent"}, IgnoreMissingComponents: true},
			check: func(t *testing.T, d *unstructured.Unstructured) {
				if got := field(t, d, "spec", "template", "spec", "serviceAccountName"); got != "patched" {
					t.Errorf("serviceAccountName %q", got)
				}
				if d.GetAnnotations()["from-component"] != "yes" {
					t.Errorf("annotations %v", d.GetAnnotations())
				}
			}},
		{name: "a missing component", o: argov1.ApplicationSourceKustomize{Components: []string{"absent"}},
			wantErr: "kustomize component 'absent' does not exist"},
		{name: "a count that is not a number", o: argov1.ApplicationSourceKustomize{Replicas: []argov1.KustomizeReplica{{Name: "web", Count: intstr.FromString("two")}}},
			wantErr: "expected integer value for count. Received: two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			res, err := render(t, root, argov1.ApplicationSource{Path: "overlay", Kustomize: &o})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Objects) != 1 || res.SourceType != argov1.SourceTypeKustomize {
				t.Fatalf("objects %v, type %s", ids(res.Objects), res.SourceType)
			}
			tt.check(t, res.Objects[0])
		})
	}
}

func containerImage(d *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
	return img
}

func TestParseImage(t *testing.T) {
	tests := []struct {
		in   string
		want kustypes.Image
	}{
		{"nginx:1.2", kustypes.Image{Name: "nginx", NewTag: "1.2"}},
		{"nginx@sha256:abc", kustypes.Image{Name: "nginx", Digest: "sha256:abc"}},
		{"nginx:1.2@sha256:abc", kustypes.Image{Name: "nginx", NewTag: "1.2", Digest: "sha256:abc"}},
		{"nginx=registry:5000/web/nginx:2", kustypes.Image{Name: "nginx", NewName: "registry:5000/web/nginx", NewTag: "2"}},
		{"registry:5000/nginx", kustypes.Image{Name: "registry:5000/nginx"}},
		{"old=new", kustypes.Image{Name: "old", NewName: "new"}},
	}
	for _, tt := range tests {
		if got := parseImage(tt.in); got != tt.want {
			t.Errorf("parseImage(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestSetImageKeepsStarValues(t *testing.T) {
	images := []kustypes.Image{{Name: "nginx", NewName: "mirror/nginx", NewTag: "1"}}
	got := setImage(images, kustypes.Image{Name: "nginx", NewName: "*", NewTag: "2"})
	if !slices.Equal(got, []kustypes.Image{{Name: "nginx", NewName: "mirror/nginx", NewTag: "2"}}) {
		t.Errorf("setImage = %+v", got)
	}
}

func TestCompileGlob(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*.yaml", []string{"a.yaml", "sub/a.yaml"}, []string{"a.yml"}},
		{"{a,b}/*.{yaml,json}", []string{"a/x.yaml", "b/y.json"}, []string{"c/x.yaml", "a/x.yml"}},
		{"{prod/{x,y},dev}.yaml", []string{"prod/x.yaml", "dev.yaml"}, []string{"prod/z.yaml"}},
		{"file?.yaml", []string{"file1.yaml"}, []string{"file12.yaml"}},
		{"[!a]*.yaml", []string{"b.yaml"}, []string{"a.yaml"}},
		{"[a-c].yaml", []string{"b.yaml"}, []string{"d.yaml"}},
		{`\{x\}.yaml`, []string{"{x}.yaml"}, []string{"x.yaml"}},
	}
	for _, tt := range tests {
		re, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		for _, m := range tt.match {
			if !re.MatchString(m) {
				t.Errorf("%s does not match %s", tt.pattern, m)
			}
		}
		for _, m := range tt.miss {
			if re.MatchString(m) {
				t.Errorf("%s matches %s", tt.pattern, m)
			}
		}
	}
	for _, bad := range []string{"{a,b", "[abc"} {
		if _, err := compileGlob(bad); err == nil || !strings.Contains(err.Error(), "invalid glob") {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func TestEnvsubst(t *testing.T) {
	vars := env(Input{AppName: "web", Namespace: "prod", Project: "p", Revision: "0123456789",
		Source: argov1.ApplicationSource{RepoURL: "https://git/x", Path: "apps/web", TargetRevision: "main"}})
	tests := map[string]string{
		"$ARGOCD_APP_NAME-${ARGOCD_APP_NAMESPACE}":                       "web-prod",
		"$ARGOCD_APP_REVISION_SHORT/$ARGOCD_APP_REVISION_SHORT_8":        "0123456/01234567",
		"$ARGOCD_APP_PROJECT_NAME $ARGOCD_APP_SOURCE_PATH":               "p apps/web",
		"$ARGOCD_APP_SOURCE_REPO_URL@$ARGOCD_APP_SOURCE_TARGET_REVISION": "https://git/x@main",
		"$UNKNOWN|$$literal": "|$literal",
	}
	for in, want := range tests {
		if got := envsubst(in, vars); got != want {
			t.Errorf("envsubst(%q) = %q, want %q", in, got, want)
		}
	}
}
