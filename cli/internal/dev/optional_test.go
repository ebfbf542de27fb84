package dev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOptionalForRunsBuiltImageControllersOfARepositoryUsingImageKinds(t *testing.T) {
	root, tree := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{"bin/image-reflector-controller": "#!/bin/sh\n"})
	writeFiles(t, tree, map[string]string{
		"clusters/dev/apps.yaml":   "apiVersion: v1\nkind: ConfigMap\n",
		"clusters/dev/images.yaml": "---\napiVersion: \"image.toolkit.fluxcd.io/v1\"\nkind: ImageRepository\n",
		"other/ignored.yaml":       "apiVersion: image.toolkit.fluxcd.io/v1\n",
	})
	run, components, notes := OptionalFor(root, &Source{WorkTree: tree, Path: "./clusters/dev"})
	if strings.Join(run, ",") != "image-reflector-controller" ||
		strings.Join(components, ",") != "image-reflector-controller,image-automation-controller" {
		t.Errorf("run %q, components %q", run, components)
	}
	want := "image-automation-controller is not built (no bin/image-automation-controller): the repository's ImageUpdateAutomations are applied but not reconciled"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q, want [%q]", notes, want)
	}
}

func TestOptionalForRunsNothingForARepositoryWithoutImageKinds(t *testing.T) {
	root, tree := t.TempDir(), t.TempDir()
	writeFiles(t, root, map[string]string{"bin/image-reflector-controller": "#!/bin/sh\n"})
	writeFiles(t, tree, map[string]string{"apps/a.yaml": "apiVersion: apps/v1\nkind: Deployment\n# apiVersion: image.toolkit.fluxcd.io/v1\n"})
	if run, components, notes := OptionalFor(root, &Source{WorkTree: tree, Path: "./"}); run != nil || components != nil || notes != nil {
		t.Errorf("run %q, components %q, notes %q", run, components, notes)
	}
	if run, _, _ := OptionalFor(root, &Source{URL: "https://example.com/r.git"}); run != nil {
		t.Errorf("remote repository: run %q", run)
	}
}
