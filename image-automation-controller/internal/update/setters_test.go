package update

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var policies = map[string]LatestRef{
	"apps:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "6.15.0"},
	"apps:pinned":  {Name: "ghcr.io/org/app", Tag: "1.2.0", Digest: "sha256:0123456789abcdef"},
	"apps:numeric": {Name: "ghcr.io/org/num", Tag: "1.10"},
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The podinfo kustomize directory with a marker added: only the marked
// line changes, every other byte of every file is as it was.
func TestSettersChangeOnlyTheMarkedLineOfPodinfo(t *testing.T) {
	shared := os.Getenv("EDDY_SHARED_DIR")
	if shared == "" {
		shared = "/work/shared"
	}
	src := filepath.Join(shared, "testdata/repos/podinfo/kustomize")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no podinfo test data: %v", err)
	}
	dir := copyDir(t, src)
	orig := readFile(t, dir, "deployment.yaml")
	const old = "        image: ghcr.io/stefanprodan/podinfo:6.14.1\n"
	marked := strings.Replace(orig, old, strings.TrimSuffix(old, "\n")+` # {"$imagepolicy": "apps:podinfo"}`+"\n", 1)
	if marked == orig {
		t.Fatal("the image line was not found")
	}
	if err := os.WriteFile(filepath.Join(dir, "deployment.yaml"), []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, f := range []string{"hpa.yaml", "kustomization.yaml", "service.yaml"} {
		before[f] = readFile(t, dir, f)
	}
	res, err := WithSetters(dir, "", policies)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(marked, "podinfo:6.14.1 #", "podinfo:6.15.0 #", 1)
	if got := readFile(t, dir, "deployment.yaml"); got != want {
		t.Errorf("deployment.yaml:\n%s\nwant:\n%s", got, want)
	}
	for f, b := range before {
		if readFile(t, dir, f) != b {
			t.Errorf("%s changed", f)
		}
	}
	changes := res.List()
	wantChange := Change{OldValue: "ghcr.io/stefanprodan/podinfo:6.14.1", NewValue: "ghcr.io/stefanprodan/podinfo:6.15.0",
		Setter: "apps:podinfo", File: "deployment.yaml", Line: 26}
	if len(changes) != 1 || changes[0] != wantChange {
		t.Errorf("changes %+v, want %+v", changes, wantChange)
	}
	obj := ObjectIdentifier{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"}
	if _, ok := res.FileChanges["deployment.yaml"][obj]; !ok {
		t.Errorf("changes by object %+v, want %v", res.FileChanges, obj)
	}
}

// Each suffix sets its part; quoting, comments, separators and CRLF stay.
func TestSettersSuffixesKeepStyleAndLineEndings(t *testing.T) {
	in := "# leading comment\r\n" +
		"apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: cm   # keep\r\n---\r\n" +
		"apiVersion: helm.toolkit.fluxcd.io/v2\r\nkind: HelmRelease\r\nmetadata: {name: hr, namespace: apps}\r\nspec:\r\n  values:\r\n" +
		"    image:\r\n" +
		"      repository: \"ghcr.io/old/podinfo\"  # {\"$imagepolicy\": \"apps:podinfo:name\"}\r\n" +
		"      tag: '6.0.0' # {\"$imagepolicy\": \"apps:podinfo:tag\"}\r\n" +
		"      digest: sha256:old # {\"$imagepolicy\": \"apps:pinned:digest\"}\r\n" +
		"      num: \"1.9\" # {\"$imagepolicy\": \"apps:numeric:tag\"}\r\n" +
		"      plainnum: 1.9 # {\"$imagepolicy\": \"apps:numeric:tag\"}\r\n" +
		"      full: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:pinned\"}\r\n" +
		"      nodigest: x # {\"$imagepolicy\": \"apps:podinfo:digest\"}\r\n" +
		"    list:\r\n    - a:1 # {\"$imagepolicy\": \"apps:podinfo\"}\r\n" +
		"    flow: [ghcr.io/x:1, b] # {\"$imagepolicy\": \"apps:podinfo\"}\r\n"
	dir := writeFiles(t, map[string]string{"release.yaml": in})
	res, err := WithSetters(dir, ".", policies)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		`"ghcr.io/old/podinfo"`, `"ghcr.io/stefanprodan/podinfo"`,
		`'6.0.0'`, `'6.15.0'`,
		`sha256:old`, `sha256:0123456789abcdef`,
		`"1.9"`, `"1.10"`,
		`plainnum: 1.9`, `plainnum: "1.10"`,
		`ghcr.io/org/app:1.0.0`, `ghcr.io/org/app:1.2.0@sha256:0123456789abcdef`,
		`- a:1`, `- ghcr.io/stefanprodan/podinfo:6.15.0`,
	).Replace(in)
	if got := readFile(t, dir, "release.yaml"); got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	if n := len(res.List()); n != 7 {
		t.Errorf("%d changes, want 7: %+v", n, res.List())
	}
	obj := ObjectIdentifier{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "hr", Namespace: "apps"}
	if len(res.Objects()[obj]) != 7 {
		t.Errorf("objects %+v", res.Objects())
	}
	if len(res.Changes()) != 6 { // the two numeric tag changes are one
		t.Errorf("deduplicated changes %+v", res.Changes())
	}
}

// Files that are not YAML, not named as YAML, or without the token are
// left alone; unknown policies are reported, not fatal.
func TestSettersSkipInvalidAndUnknown(t *testing.T) {
	bad := "image: a:1 # {\"$imagepolicy\": \"apps:podinfo\"}\n  bad: [\n"
	files := map[string]string{
		"bad.yaml":            bad,
		"notes.txt":           "image: a:1 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"unknown.yml":         "image: a:1 # {\"$imagepolicy\": \"apps:nope\"}\n",
		"sub/Kustomization":   "images:\n- newTag: 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n",
		"other/Kustomization": "images:\n- newTag: 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n",
		"sub/block.yaml":      "image: |- # {\"$imagepolicy\": \"apps:podinfo\"}\n  a:1\n",
	}
	dir := writeFiles(t, files)
	res, err := WithSetters(dir, "sub", policies)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "sub/Kustomization"); got != "images:\n- newTag: 6.15.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n" {
		t.Errorf("sub/Kustomization: %q", got)
	}
	if readFile(t, dir, "other/Kustomization") != files["other/Kustomization"] {
		t.Error("a file outside the update path changed")
	}
	if len(res.Skipped) != 1 || res.Skipped[0].File != "block.yaml" {
		t.Errorf("skipped %+v", res.Skipped)
	}
	res, err = WithSetters(dir, "", policies)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"bad.yaml": bad, "notes.txt": files["notes.txt"], "unknown.yml": files["unknown.yml"]} {
		if readFile(t, dir, name) != content {
			t.Errorf("%s changed", name)
		}
	}
	wantUnknown := []Marker{{File: "unknown.yml", Line: 1, Setter: "apps:nope"}}
	if !reflect.DeepEqual(res.UnknownPolicies, wantUnknown) {
		t.Errorf("unknown %+v", res.UnknownPolicies)
	}
	if len(res.Skipped) < 1 || res.Skipped[0].File != "bad.yaml" || !strings.HasPrefix(res.Skipped[0].Reason, "not valid YAML") {
		t.Errorf("skipped %+v", res.Skipped)
	}
	if _, err := WithSetters(dir, "../..", policies); err != nil && !bytes.Contains([]byte(err.Error()), []byte("update path")) {
		t.Errorf("escaping path: %v", err)
	}
}

// A second run changes nothing: the update is idempotent.
func TestSettersSecondRunChangesNothing(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.yaml": "image: a:1 # {\"$imagepolicy\": \"apps:podinfo\"}\n"})
	if res, err := WithSetters(dir, "", policies); err != nil || res.Empty() {
		t.Fatalf("first run: %+v %v", res, err)
	}
	if res, err := WithSetters(dir, "", policies); err != nil || !res.Empty() {
		t.Fatalf("second run: %+v %v", res, err)
	}
}
