package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// repo writes files (slash paths → content) under a new temporary
// directory and returns it. A content starting with "->" makes a symlink
// to the rest.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, abs); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func render(t *testing.T, root string, src argov1.ApplicationSource) (*Result, error) {
	t.Helper()
	return Render(context.Background(), Input{
		Root: root, Source: src, AppName: "app", Project: "default", Namespace: "dest",
		Revision: "0123456789abcdef0123456789abcdef01234567", KubeVersion: "v1.37.2",
	})
}

func TestDetectType(t *testing.T) {
	root := repo(t, map[string]string{
		"both/kustomization.yaml": "resources: []\n", "both/Chart.yaml": "name: x\nversion: 0.1.0\napiVersion: v2\n",
		"chart/Chart.yaml":   "name: x\nversion: 0.1.0\napiVersion: v2\n",
		"kust/Kustomization": "resources: []\n", "kustyml/kustomization.yml": "resources: []\n",
		"plain/a.yaml": cm("a"), "file": "x",
	})
	tests := []struct {
		name    string
		src     argov1.ApplicationSource
		want    string
		wantErr string
	}{
		{name: "a kustomization beside a Chart.yaml is Kustomize", src: argov1.ApplicationSource{Path: "both"}, want: argov1.SourceTypeKustomize},
		{name: "a Chart.yaml is Helm", src: argov1.ApplicationSource{Path: "chart"}, want: argov1.SourceTypeHelm},
		{name: "a file named Kustomization is Kustomize", src: argov1.ApplicationSource{Path: "kust"}, want: argov1.SourceTypeKustomize},
		{name: "kustomization.yml is Kustomize", src: argov1.ApplicationSource{Path: "kustyml"}, want: argov1.SourceTypeKustomize},
		{name: "anything else is Directory", src: argov1.ApplicationSource{Path: "plain"}, want: argov1.SourceTypeDirectory},
		{name: "the root is a path", src: argov1.ApplicationSource{}, want: argov1.SourceTypeDirectory},
		{name: "a chart source is Helm", src: argov1.ApplicationSource{Chart: "podinfo"}, want: argov1.SourceTypeHelm},
		{name: "a directory block wins over a kustomization", src: argov1.ApplicationSource{Path: "both", Directory: &argov1.ApplicationSourceDirectory{}}, want: argov1.SourceTypeDirectory},
		{name: "a helm block wins over a kustomization", src: argov1.ApplicationSource{Path: "both", Helm: &argov1.ApplicationSourceHelm{}}, want: argov1.SourceTypeHelm},
		{name: "two blocks are an error", src: argov1.ApplicationSource{Path: "both", Helm: &argov1.ApplicationSourceHelm{}, Kustomize: &argov1.ApplicationSourceKustomize{}},
			wantErr: "multiple application sources defined: Kustomize,Helm"},
		{name: "a plugin is ErrPlugin", src: argov1.ApplicationSource{Path: "plain", Plugin: &argov1.ApplicationSourcePlugin{}}, want: argov1.SourceTypePlugin,
			wantErr: ErrPlugin.Error()},
		{name: "a path above the root is refused", src: argov1.ApplicationSource{Path: "plain/../../x"}, wantErr: "path 'plain/../../x' is outside the repository"},
		{name: "an absolute path is refused", src: argov1.ApplicationSource{Path: "/etc"}, wantErr: "/etc: app path is absolute"},
		{name: "a missing path", src: argov1.ApplicationSource{Path: "nope"}, wantErr: "nope: app path does not exist"},
		{name: "a file is not a path", src: argov1.ApplicationSource{Path: "file"}, wantErr: "file: app path is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DetectType(root, tt.src)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("type = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRenderErrorsAreStable checks that bad input gets a message naming
// the path as written, with no trace of the checkout's directory.
func TestRenderErrorsAreStable(t *testing.T) {
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	root := repo(t, map[string]string{
		"escape/link.yaml":             "->../../../etc/passwd",
		"abs/link.yaml":                "->/etc/hosts",
		"badjsonnet/main.jsonnet":      "{ a: std.nope() }",
		"importer/main.jsonnet":        "import '../../secret.libsonnet'",
		"notobj/main.jsonnet":          "1",
		"badyaml/a.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
		"json/two.json":                `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
		"nokind/main.jsonnet":          "{apiVersion: 'v1', metadata: {name: 'x'}}",
		"failing/Chart.yaml":           chart,
		"failing/templates/x.yaml":     `{{ fail "the chart says no" }}`,
		"badtpl/Chart.yaml":            chart,
		"badtpl/templates/x.yaml":      "{{ .Values.a.b.c }",
		"values/Chart.yaml":            chart,
		"values/templates/cm.yaml":     cm("x"),
		"kust/kustomization.yaml":      "resources:\n- ../../outside\n",
		"remote/kustomization.yaml":    "resources:\n- https://github.com/acme/infra//base?ref=v1\n",
		"missingres/kustomization.yml": "resources:\n- nothere.yaml\n",
		"plain/a.yaml":                 cm("a"),
	})
	helm := func(h argov1.ApplicationSourceHelm) *argov1.ApplicationSourceHelm { return &h }
	tests := []struct {
		name string
		src  argov1.ApplicationSource
		want string // the whole message, or its start when ending in "…"
	}{
		{name: "a symlink out of the repository", src: argov1.ApplicationSource{Path: "plain"}, want: "repository contains out-of-bounds symlinks. file: abs/link.yaml"},
		{name: "a jsonnet error names the file", src: argov1.ApplicationSource{Path: "badjsonnet"}, want: "failed to evaluate jsonnet 'badjsonnet/main.jsonnet': …"},
		{name: "a jsonnet import out of the repository", src: argov1.ApplicationSource{Path: "importer"}, want: "failed to evaluate jsonnet 'importer/main.jsonnet': …outside the repository…"},
		{name: "jsonnet that is not objects", src: argov1.ApplicationSource{Path: "notobj"}, want: "failed to unmarshal 'notobj/main.jsonnet': a document is not an object"},
		{name: "YAML that does not decode", src: argov1.ApplicationSource{Path: "badyaml"}, want: "failed to unmarshal 'badyaml/a.yaml': …"},
		{name: "two objects in a JSON file", src: argov1.ApplicationSource{Path: "json"}, want: "found multiple objects in 'json/two.json': a JSON file holds one object"},
		{name: "an object without kind", src: argov1.ApplicationSource{Path: "nokind"}, want: "failed to unmarshal 'nokind/main.jsonnet': object kind is missing"},
		{name: "a chart that fails", src: argov1.ApplicationSource{Path: "failing"}, want: "helm template of 'failing' failed: …the chart says no"},
		{name: "a chart that does not parse", src: argov1.ApplicationSource{Path: "badtpl"}, want: "helm template of 'badtpl' failed: …"},
		{name: "a value file out of the repository", src: argov1.ApplicationSource{Path: "values", Helm: helm(argov1.ApplicationSourceHelm{ValueFiles: []string{"../../x.yaml"}})},
			want: "value file path '../../x.yaml' is outside the repository"},
		{name: "a missing value file", src: argov1.ApplicationSource{Path: "values", Helm: helm(argov1.ApplicationSourceHelm{ValueFiles: []string{"nope.yaml"}})},
			want: "value file 'nope.yaml' does not exist"},
		{name: "a value file URL", src: argov1.ApplicationSource{Path: "values", Helm: helm(argov1.ApplicationSourceHelm{ValueFiles: []string{"https://example.com/v.yaml"}})},
			want: "value file 'https://example.com/v.yaml': URLs are not supported by Eddy, put the file in a repository"},
		{name: "a kustomize resource out of the repository", src: argov1.ApplicationSource{Path: "kust"},
			want: "'../../outside' in kust/kustomization.yaml: path '../../outside' is outside the repository"},
		{name: "a remote kustomize base", src: argov1.ApplicationSource{Path: "remote"},
			want: "remote resource 'https://github.com/acme/infra//base?ref=v1' in remote/kustomization.yaml: remote bases are not supported by Eddy yet"},
		{name: "a missing kustomize resource", src: argov1.ApplicationSource{Path: "missingres"}, want: "kustomize build failed: …"},
		{name: "overrides without a kustomization", src: argov1.ApplicationSource{Path: "plain", Kustomize: &argov1.ApplicationSourceKustomize{NamePrefix: "p-"}},
			want: "kustomization file not found in 'plain'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := root
			if tt.name != "a symlink out of the repository" {
				r = withoutLinks(t, root)
			}
			_, err := render(t, r, tt.src)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, r) || strings.Contains(msg, os.TempDir()) {
				t.Errorf("message shows the checkout's directory: %s", msg)
			}
			if !matches(msg, tt.want) {
				t.Errorf("err = %s\nwant %s", msg, tt.want)
			}
		})
	}
}

// matches compares msg with want, where "…" in want stands for any text.
func matches(msg, want string) bool {
	parts := strings.Split(want, "…")
	if !strings.HasPrefix(msg, parts[0]) {
		return false
	}
	rest := msg[len(parts[0]):]
	for i, p := range parts[1:] {
		j := strings.Index(rest, p)
		if j < 0 || (i == len(parts)-2 && p != "" && !strings.HasSuffix(rest, p)) {
			return false
		}
		rest = rest[j+len(p):]
	}
	return true
}

// withoutLinks is a copy of root without its symbolic links, so that the
// other error cases are not hidden behind the checkout's link check.
func withoutLinks(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestDirectory(t *testing.T) {
	root := repo(t, map[string]string{
		"app/a.yaml":              cm("a") + "---\n---\nnull\n",
		"app/b.yml":               "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b1}}\n- null\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b2}}\n",
		"app/c.json":              `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
		"app/d.txt":               cm("d"),
		"app/e.yaml":              "just: some\nconfig: file\n",
		"app/f.yaml":              "# +argocd:skip-file-rendering\n" + cm("f"),
		"app/g.yaml":              "apiVersion: v1\nkind: ConfigMapList\nitems: null\n",
		"app/sub/h.yaml":          cm("h"),
		"app/sub/deep/i.yaml":     cm("i"),
		"app/other/j.yaml":        cm("j"),
		"app/link.yaml":           "->sub/h.yaml",
		"app/lib.jsonnet":         "local p = import 'params.libsonnet'; local v = import 'vendor.libsonnet'; [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: p.name + '-' + v + '-' + std.extVar('env') + '-' + std.toString(std.extVar('n'))}}]",
		"app/params.libsonnet":    "{ name: 'k' }",
		"vendor/vendor.libsonnet": "'vendored'",
	})
	dir := func(d argov1.ApplicationSourceDirectory) argov1.ApplicationSource {
		return argov1.ApplicationSource{Path: "app", Directory: &d}
	}
	jsonnet := argov1.ApplicationSourceJsonnet{Libs: []string{"vendor"}, ExtVars: []argov1.JsonnetVar{
		{Name: "env", Value: "$ARGOCD_APP_REVISION_SHORT"}, {Name: "n", Value: "1+1", Code: true},
	}}
	tests := []struct {
		name string
		src  argov1.ApplicationSource
		want []string
	}{
		{name: "the top directory only, lists expanded, non-manifests and marked files skipped",
			src:  dir(argov1.ApplicationSourceDirectory{Jsonnet: jsonnet}),
			want: []string{"ConfigMap/a", "ConfigMap/b1", "ConfigMap/b2", "ConfigMap/c", "ConfigMap/k-vendored-0123456-2", "ConfigMap/h"}},
		{name: "recurse descends", src: dir(argov1.ApplicationSourceDirectory{Recurse: true, Include: "{sub,other}/**"}),
			want: []string{"ConfigMap/j", "ConfigMap/i", "ConfigMap/h"}},
		{name: "exclude with a brace list", src: dir(argov1.ApplicationSourceDirectory{Recurse: true, Exclude: "{*.jsonnet,sub/*,*.y*ml}"}),
			want: []string{"ConfigMap/c"}},
		{name: "include a single file", src: dir(argov1.ApplicationSourceDirectory{Include: "c.json"}), want: []string{"ConfigMap/c"}},
		{name: "disableExtensionFilter reads every file", src: dir(argov1.ApplicationSourceDirectory{DisableExtensionFilter: true, Include: "*.txt"}),
			want: []string{"ConfigMap/d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := render(t, root, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.Objects); !slices.Equal(got, tt.want) {
				t.Errorf("objects = %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestHelmValuesAndParameters(t *testing.T) {
	tpl := `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
  a: {{ .Values.a | quote }}
  b: {{ .Values.b | quote }}
  c: {{ .Values.c | quote }}
  list: {{ .Values.list | toJson | quote }}
  file: {{ .Values.file | default "" | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  str: {{ kindOf .Values.num | quote }}
  lookup: {{ len (lookup "v1" "ConfigMap" "dest" "x") | quote }}
  api: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
`
	hooks := `apiVersion: batch/v1
kind: Job
metadata:
  name: pre
  annotations: {"helm.sh/hook": pre-install}
---
apiVersion: v1
kind: Pod
metadata:
  name: test
  annotations: {"helm.sh/hook": test}
`
	root := repo(t, map[string]string{
		"chart/Chart.yaml":           "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/values.yaml":          "a: default\nb: default\nc: default\nnum: 1\n",
		"chart/templates/cm.yaml":    tpl,
		"chart/templates/hooks.yaml": hooks,
		"chart/templates/NOTES.txt":  "notes {{ .Release.Name }}",
		"chart/crds/crd.yaml":        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things.example.com\n",
		"chart/v1.yaml":              "a: from-v1\nb: from-v1\n",
		"shared/v2.yaml":             "b: from-v2\n",
		"chart/file.txt":             "file content",
	})
	other := repo(t, map[string]string{"env/prod.yaml": "c: from-ref\n"})
	helm := func(h argov1.ApplicationSourceHelm) argov1.ApplicationSource {
		return argov1.ApplicationSource{Path: "chart", Helm: &h}
	}
	tests := []struct {
		name  string
		src   argov1.ApplicationSource
		want  []string
		data  map[string]string
		ns    string
		objNs string
	}{
		// Helm orders hooks by weight, then kind (Pod before Job).
		{name: "defaults: CRDs first, hooks and test hooks after the manifest, no NOTES", src: argov1.ApplicationSource{Path: "chart"},
			want: []string{"CustomResourceDefinition/things.example.com", "ConfigMap/app", "Pod/test", "Job/pre"},
			data: map[string]string{"a": "default", "kube": "v1.37.2", "str": "float64", "lookup": "0", "api": "true"}, objNs: "dest"},
		{name: "value files in order, the ref source, inline values, parameters last",
			src: helm(argov1.ApplicationSourceHelm{
				ValueFiles: []string{"v1.yaml", "/shared/v2.yaml", "$values/env/prod.yaml", "missing.yaml"}, IgnoreMissingValueFiles: true,
				Values:         "a: from-values\n",
				Parameters:     []argov1.HelmParameter{{Name: "list", Value: "{x,y}"}, {Name: "a", Value: "p,q-$ARGOCD_APP_REVISION_SHORT_8"}, {Name: "num", Value: "2", ForceString: true}},
				FileParameters: []argov1.HelmFileParameter{{Name: "file", Path: "file.txt"}},
				ReleaseName:    "rel", Namespace: "other", SkipCrds: true, SkipTests: true, KubeVersion: "v1.30.1",
			}),
			want:  []string{"ConfigMap/rel", "Job/pre"},
			data:  map[string]string{"a": "p,q-01234567", "b": "from-v2", "c": "from-ref", "list": `["x","y"]`, "file": "file content", "kube": "v1.30.1", "str": "string"},
			objNs: "other"},
		{name: "valuesObject wins over values",
			src:  helm(argov1.ApplicationSourceHelm{Values: "a: from-values\n", ValuesObject: &apiextensionsv1.JSON{Raw: []byte(`{"a":"from-object"}`)}}),
			want: []string{"CustomResourceDefinition/things.example.com", "ConfigMap/app", "Pod/test", "Job/pre"},
			data: map[string]string{"a": "from-object", "b": "default"}, objNs: "dest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(context.Background(), Input{
				Root: root, Source: tt.src, AppName: "app", Namespace: "dest", KubeVersion: "v1.37.2",
				Revision: "0123456789abcdef", RefRoots: map[string]string{"$values": other}, APIVersions: []string{"example.com/v1"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.Objects); !slices.Equal(got, tt.want) {
				t.Fatalf("objects = %v\nwant %v", got, tt.want)
			}
			cm := findObject(res.Objects, "ConfigMap")
			if cm.GetNamespace() != tt.objNs {
				t.Errorf("namespace = %q, want %q", cm.GetNamespace(), tt.objNs)
			}
			data, _, err := unstructured.NestedStringMap(cm.Object, "data")
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.data {
				if data[k] != v {
					t.Errorf("data.%s = %q, want %q", k, data[k], v)
				}
			}
		})
	}
}

func findObject(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind {
			return u
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{}}
}

func TestErrPluginIsStable(t *testing.T) {
	if !errors.Is(ErrPlugin, ErrPlugin) || ErrPlugin.Error() != "config management plugins are not supported by Eddy" {
		t.Fatal(ErrPlugin)
	}
}

// TestSourceFilesOverrideTheSource checks Argo CD's parameter override
// files in the app path: the generic one, then the app's own, over the
// Application's source; neither is read as a manifest.
func TestSourceFilesOverrideTheSource(t *testing.T) {
	root := repo(t, map[string]string{
		"chart/Chart.yaml":              "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  tag: {{ .Values.tag | quote }}\n  env: {{ .Values.env | default \"\" | quote }}\n",
		"chart/.argocd-source.yaml":     "helm:\n  parameters:\n  - name: tag\n    value: from-generic\n  - name: env\n    value: generic\n",
		"chart/.argocd-source-app.yaml": "helm:\n  parameters:\n  - name: tag\n    value: from-app-file\n",
		"plain/a.yaml":                  cm("a"),
		"plain/.argocd-source.yaml":     "directory:\n  recurse: true\n",
		"plain/sub/b.yaml":              cm("b"),
	})
	res, err := render(t, root, argov1.ApplicationSource{Path: "chart"})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(res.Objects[0].Object, "data")
	if data["tag"] != "from-app-file" || data["env"] != "" {
		t.Errorf("data = %v, want the app file's parameters replacing the generic file's list", data)
	}
	res, err = render(t, root, argov1.ApplicationSource{Path: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Objects); !slices.Equal(got, []string{"ConfigMap/a", "ConfigMap/b"}) || res.SourceType != argov1.SourceTypeDirectory {
		t.Errorf("objects = %v (%s), want recursion from .argocd-source.yaml", got, res.SourceType)
	}
}

// TestHelmRepositoryChartRendersFromRoot checks a chart source: Root is the
// unpacked chart, and source.path plays no part.
func TestHelmRepositoryChartRendersFromRoot(t *testing.T) {
	root := repo(t, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: podinfo\nversion: 6.0.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Version }}\n",
		"templates/NOTES.txt": "hello",
	})
	res, err := render(t, root, argov1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "podinfo", TargetRevision: "6.*", Path: "nowhere"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Objects); !slices.Equal(got, []string{"ConfigMap/app-6.0.0"}) || res.SourceType != argov1.SourceTypeHelm {
		t.Errorf("objects = %v (%s)", got, res.SourceType)
	}
}
