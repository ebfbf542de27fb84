package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigFile makes a sparse file larger than an artifact may hold.
func bigFile(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(101 << 20); err != nil {
		t.Fatal(err)
	}
}

// TestBuildLeavesOutWhatGitIgnoresE2E: files Git ignores (.gitignore at any
// depth, .git/info/exclude) are not in the clone source-controller packs,
// so large build outputs beside the manifests do not count against the
// artifact's limit; a new file Git does not ignore is built.
func TestBuildLeavesOutWhatGitIgnoresE2E(t *testing.T) {
	repo := gitInitFiles(t, map[string]string{
		".gitignore":                   "/bin/\n",
		"tools/.gitignore":             "*.tar\n",
		"apps/base/kustomization.yaml": "resources: [deploy.yaml, new.yaml]\n",
		"apps/base/deploy.yaml":        deployYAML("web", "ghcr.io/example/web:1.0"),
		"apps/prod/kustomization.yaml": "resources: [../base]\n",
		"apps/base/new.yaml":           deployYAML("uncommitted", "ghcr.io/example/web:1.0"),
	})
	bigFile(t, filepath.Join(repo, "bin", "eddy"))
	bigFile(t, filepath.Join(repo, "tools", "cache.tar"))
	bigFile(t, filepath.Join(repo, "scratch", "dump"))
	if err := os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("scratch/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ks := writeKustomizationFile(t, "apps", "")
	out, code := runEddyIn(t, repo, nil, "build", "ks", "apps", "--path", "./apps/prod", "--kustomization-file", ks, "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "name: web\n") || !strings.Contains(out, "name: uncommitted\n") {
		t.Errorf("want both Deployments built:\n%s", out)
	}
	if err := os.CopyFS(filepath.Join(repo, "bin", "generated"), os.DirFS(filepath.Join(repo, "apps", "base"))); err != nil {
		t.Fatal(err)
	}
	out, _ = runEddyIn(t, repo, nil, "build", "ks", "apps", "--path", "./bin/generated", "--kustomization-file", ks, "--dry-run")
	oneLineError(t, out, `invalid resource path "./bin/generated"`, "Git ignores it")
}

// TestBuildOutsideGitFromLargeWorkingDirectoryE2E: with no Git repository
// around --path, a working directory too large to be a source (as $HOME or
// / are) does not fail the build: the directory alone is read.
func TestBuildOutsideGitFromLargeWorkingDirectoryE2E(t *testing.T) {
	home := t.TempDir()
	bigFile(t, filepath.Join(home, "Downloads", "image.iso"))
	app := filepath.Join(home, "work", "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "deploy.yaml"), []byte(deployYAML("web", "ghcr.io/example/web:1.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	ks := writeKustomizationFile(t, "app", "")
	out, code := runEddyIn(t, home, nil, "build", "ks", "app", "--path", "work/app", "--kustomization-file", ks, "--dry-run")
	if code != 0 || !strings.Contains(out, "name: web\n") {
		t.Errorf("exit %d, want the Deployment built:\n%s", code, out)
	}
}

// TestBuildPicksItsKustomizationFromAFileOfSeveralE2E: --kustomization-file
// may hold several objects (a cluster directory's infrastructure.yaml
// holds two Kustomizations), as flux build reads it: the one named, in the
// namespace of -n or none; another kind with an unrelated spec is skipped;
// a name the file does not hold is a one-line error naming it.
func TestBuildPicksItsKustomizationFromAFileOfSeveralE2E(t *testing.T) {
	repo := gitInitFiles(t, map[string]string{
		"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
	})
	file := filepath.Join(t.TempDir(), "infrastructure.yaml")
	if err := os.WriteFile(file, []byte(`# the cluster's Kustomizations
---
apiVersion: v1
kind: Namespace
metadata: {name: infra}
spec: {finalizers: [kubernetes]}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra-controllers, namespace: flux-system}
spec: {interval: 1h, path: ./app, prune: true, targetNamespace: controllers, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra-configs, namespace: other}
spec: {interval: 1h, path: ./app, prune: true, targetNamespace: elsewhere, sourceRef: {kind: GitRepository, name: flux-system}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra-configs, namespace: flux-system}
spec: {interval: 1h, path: ./app, prune: true, targetNamespace: configs, sourceRef: {kind: GitRepository, name: flux-system}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ namespace, want string }{{"flux-system", "configs"}, {"other", "elsewhere"}} {
		out, code := runEddyIn(t, repo, nil, "build", "ks", "infra-configs", "-n", c.namespace, "--path", "./app", "--kustomization-file", file, "--dry-run")
		if code != 0 || !strings.Contains(out, "namespace: "+c.want+"\n") {
			t.Errorf("-n %s: exit %d, want the ConfigMap in namespace %s:\n%s", c.namespace, code, c.want, out)
		}
	}
	out, _ := runEddyIn(t, repo, nil, "build", "ks", "apps", "--path", "./app", "--kustomization-file", file, "--dry-run")
	oneLineError(t, out, "invalid kustomization file", `Kustomization "apps" in namespace "flux-system"`)
}
