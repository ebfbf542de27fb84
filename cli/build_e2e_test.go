package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// testdataBuild is one directory that the real kustomize built into
// shared/testdata/expected/<repo>/kustomize-build/<dir>.
type testdataBuild struct {
	repo, dir string
	expected  string // its expected-objects.txt, relative to shared/testdata/expected
}

// testdataBuilds lists every directory of the testdata repositories that
// has a kustomization.yaml (and is not a Component), with its expected
// objects.
func testdataBuilds(t *testing.T) []testdataBuild {
	t.Helper()
	root := filepath.Join(testenv.TestdataDir(t), "expected")
	var out []testdataBuild
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "expected-objects.txt" || !strings.Contains(filepath.ToSlash(p), "/kustomize-build/") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		parts := strings.SplitN(filepath.ToSlash(rel), "/", 3) // <repo>/kustomize-build/<dir>
		out = append(out, testdataBuild{repo: parts[0], dir: parts[2], expected: filepath.Join(rel, d.Name())})
		return nil
	})
	if len(out) < 10 {
		t.Fatalf("found %d expected kustomize builds, want at least 10", len(out))
	}
	return out
}

// runEddyIn runs eddy in the working directory wd with extra environment
// variables, returning its combined output and exit code (logged).
func runEddyIn(t *testing.T, wd string, env []string, args ...string) (string, int) {
	t.Helper()
	_, eddy := built(t)
	cmd := exec.Command(eddy, args...)
	cmd.Dir, cmd.Env = wd, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("(in %s) $ eddy %s   (err=%v)\n%s", filepath.Base(wd), strings.Join(args, " "), err, out)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// writeKustomizationFile writes a Flux Kustomization name in flux-system
// with the given extra spec lines, and returns its path.
func writeKustomizationFile(t *testing.T, name, spec string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".yaml")
	doc := fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./
  sourceRef: {kind: GitRepository, name: flux-system}
%s`, name, spec)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// builtObjects parses eddy build's YAML output.
func builtObjects(t *testing.T, out string) []*unstructured.Unstructured {
	t.Helper()
	docs, err := testenv.YAMLDocuments([]byte(out))
	if err != nil {
		t.Fatalf("build output is not YAML: %v\n%s", err, out)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("build output is not YAML: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// objectLinesOf is objs in the format of expected-objects.txt, sorted.
func objectLinesOf(objs []*unstructured.Unstructured) []string {
	var lines []string
	for _, u := range objs {
		lines = append(lines, fmt.Sprintf("%s %s %s/%s", u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()))
	}
	sort.Strings(lines)
	return lines
}

// TestBuildEveryTestdataDirectoryE2E runs bin/eddy build ks --dry-run on
// every directory of the testdata repositories that has a
// kustomization.yaml, in a Git copy of each repository, from a working
// directory outside it: the objects equal the real kustomize's, overlays
// reaching `../base` and `../../components` included (the build reads the
// repository, as the controller reads the source artifact).
func TestBuildEveryTestdataDirectoryE2E(t *testing.T) {
	repos := map[string]string{}
	elsewhere := t.TempDir()
	ks := writeKustomizationFile(t, "local", "")
	for _, b := range testdataBuilds(t) {
		if repos[b.repo] == "" {
			repos[b.repo] = repoFrom(t, b.repo)
		}
		t.Run(b.repo+"/"+b.dir, func(t *testing.T) {
			out, code := runEddyIn(t, elsewhere, nil, "build", "ks", "local", "--path", filepath.Join(repos[b.repo], b.dir),
				"--kustomization-file", ks, "--dry-run")
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			want := slices.DeleteFunc(expectedLines(t, b.expected, ""), func(l string) bool { return l == "" })
			if got := objectLinesOf(builtObjects(t, out)); !slices.Equal(got, want) {
				t.Errorf("objects differ from kustomize's\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestBuildOverlayOfRepositoryE2E: an overlay listing `../base` builds from
// the repository's root whatever the working directory (a relative --path
// too); a resource leaving the repository is refused naming it; a
// directory the repository's .sourceignore leaves out, and a build with no
// repository around it, explain why; a spec.images digest replaces the
// tag the overlay's kustomization.yaml declares (as flux build renders it).
func TestBuildOverlayOfRepositoryE2E(t *testing.T) {
	repo := gitInitFiles(t, map[string]string{
		".sourceignore":                      "/drafts/\n",
		"apps/base/kustomization.yaml":       "resources: [deploy.yaml]\n",
		"apps/base/deploy.yaml":              deployYAML("web", "ghcr.io/example/sidecar:1.0"),
		"apps/production/kustomization.yaml": "resources: [../base]\nimages:\n- name: ghcr.io/example/sidecar\n  newTag: \"7.1\"\n",
		"apps/escape/kustomization.yaml":     "resources: [../../../outside]\n",
		"drafts/kustomization.yaml":          "resources: [../apps/base]\n",
	})
	// Beside the repository, on disk: a build in the cluster cannot reach it.
	outside := filepath.Join(filepath.Dir(repo), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "kustomization.yaml"), []byte("resources: [cm.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("4f53", 16)
	ks := writeKustomizationFile(t, "apps", "  images:\n  - name: ghcr.io/example/sidecar\n    digest: "+digest+"\n")
	for _, wd := range []string{repo, filepath.Join(repo, "apps"), t.TempDir()} {
		path := filepath.Join(repo, "apps", "production")
		if wd == repo {
			path = "./apps/production"
		}
		out, code := runEddyIn(t, wd, nil, "build", "ks", "apps", "--path", path, "--kustomization-file", ks, "--dry-run")
		if code != 0 {
			t.Fatalf("build from %s: exit %d", wd, code)
		}
		if !strings.Contains(out, "image: ghcr.io/example/sidecar@"+digest+"\n") {
			t.Errorf("the digest of spec.images does not replace the overlay's tag:\n%s", out)
		}
	}
	out, _ := runEddyIn(t, repo, nil, "build", "ks", "apps", "--path", "./apps/escape", "--kustomization-file", ks, "--dry-run")
	oneLineError(t, out, "kustomize build failed", "outside")
	out, _ = runEddyIn(t, repo, nil, "build", "ks", "apps", "--path", "./drafts", "--kustomization-file", ks, "--dry-run")
	oneLineError(t, out, `invalid resource path "./drafts"`, ".sourceignore")
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.CopyFS(plain, os.DirFS(repo)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(plain, ".git")); err != nil {
		t.Fatal(err)
	}
	out, _ = runEddyIn(t, t.TempDir(), nil, "build", "ks", "apps", "--path", filepath.Join(plain, "apps", "production"), "--kustomization-file", ks, "--dry-run")
	oneLineError(t, out, "no Git repository holds", "run eddy inside the repository")
	if out, code := runEddyIn(t, plain, nil, "build", "ks", "apps", "--path", "apps/production", "--kustomization-file", ks, "--dry-run"); code != 0 || !strings.Contains(out, digest) {
		t.Errorf("without Git, a build from the directory holding the overlay and its base: exit %d\n%s", code, out)
	}
}

// gitInitFiles writes files into a new Git repository and returns its path.
func gitInitFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "config")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gitInit(t, dir)
}

func deployYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: %[1]s, image: %[2]q}]}
`, name, image)
}
