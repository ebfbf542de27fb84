package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
)

// diffReport is what a diff printed: each `► <object> <action>` line, and
// the changed fields of each drifted object (path → "old → new").
type diffReport struct {
	objects []string
	fields  map[string]map[string]string
}

var arrayIndex = regexp.MustCompile(`\[(\d+)\]`)

// eddyDiffReport reads eddy diff's output; paths are written as flux
// writes them (`spec.a.0`, not `.spec.a[0]`), JSON strings unquoted.
func eddyDiffReport(out string) diffReport {
	r := diffReport{fields: map[string]map[string]string{}}
	var cur string
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(l, "► "):
			r.objects = append(r.objects, l)
			cur = strings.TrimSuffix(strings.TrimPrefix(l, "► "), " drifted")
		case strings.HasPrefix(l, "  ") && cur != "":
			path, change, ok := strings.Cut(strings.TrimSpace(l), ": ")
			old, new, _ := strings.Cut(change, " → ")
			if ok {
				path = arrayIndex.ReplaceAllString(strings.TrimPrefix(path, "."), ".$1")
				if r.fields[cur] == nil {
					r.fields[cur] = map[string]string{}
				}
				r.fields[cur][path] = unquote(old) + " → " + unquote(new)
			}
		}
	}
	sort.Strings(r.objects)
	return r
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return s
}

// fluxDiffReport reads flux diff's output (dyff's `path`, `± value
// change`, `- old`, `+ new` blocks). metadata.generation, which flux
// reports for every drifted object (the dry-run's next generation), is
// left out.
func fluxDiffReport(out string) diffReport {
	r := diffReport{fields: map[string]map[string]string{}}
	var cur, path, old string
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(l, "► "):
			r.objects = append(r.objects, l)
			cur, path = strings.TrimSuffix(strings.TrimPrefix(l, "► "), " drifted"), ""
		case l == "" || strings.HasPrefix(l, "±") || strings.HasPrefix(l, "⚠") || strings.HasPrefix(l, "✗"):
		case strings.HasPrefix(l, "- "):
			old = strings.TrimPrefix(l, "- ")
		case strings.HasPrefix(l, "+ ") && path != "" && path != "metadata.generation":
			if r.fields[cur] == nil {
				r.fields[cur] = map[string]string{}
			}
			r.fields[cur][path] = old + " → " + strings.TrimPrefix(l, "+ ")
		default:
			path, old = l, "<none>"
		}
	}
	sort.Strings(r.objects)
	return r
}

// TestDiffMatchesFluxDiffE2E: on an eddy dev environment syncing the
// staging overlay of flux2-kustomize-helm-example (`../base/podinfo`),
// local changes (a changed value, a new object, a removed one) are
// printed by bin/eddy diff as by the real flux diff (bin/flux) against the
// same cluster: the same objects created, drifted and deleted, the same
// fields with the same values, from the repository's root or from
// elsewhere, with the live Kustomization or --kustomization-file.
func TestDiffMatchesFluxDiffE2E(t *testing.T) {
	u := newUser(t)
	repo := filepath.Join(t.TempDir(), "flux2-kustomize-helm-example")
	if err := os.CopyFS(repo, os.DirFS(filepath.Join(testenv.TestdataDir(t), "repos", "flux2-kustomize-helm-example"))); err != nil {
		t.Fatal(err)
	}
	// The chart's repository is never fetched here: point it at loopback.
	rewrite(t, filepath.Join(repo, "apps", "base", "podinfo", "repository.yaml"), "https://stefanprodan.github.io/podinfo", "http://127.0.0.1:9/podinfo")
	gitInit(t, repo)
	u.must("dev", "up", "--detach", "--repo", repo, "--path", "./apps/staging")
	flux := newFluxCLI(t, filepath.Join(u.dir(), "cluster", "kubeconfig"))

	staging := filepath.Join(repo, "apps", "staging")
	rewrite(t, filepath.Join(staging, "podinfo-values.yaml"), "podinfo.staging", "podinfo.example.com")
	rewrite(t, filepath.Join(staging, "podinfo-values.yaml"), "enable: false", "enable: true")
	base := filepath.Join(repo, "apps", "base", "podinfo")
	if err := os.WriteFile(filepath.Join(base, "extra.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rewrite(t, filepath.Join(base, "kustomization.yaml"), "  - repository.yaml\n", "  - extra.yaml\n")
	ks := filepath.Join(t.TempDir(), "ks.yaml")
	if err := os.WriteFile(ks, []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, path: ./apps/staging, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{"► ConfigMap/podinfo/extra created", "► HelmRelease/podinfo/podinfo drifted", "► HelmRepository/podinfo/podinfo deleted"}
	for _, extra := range [][]string{nil, {"--kustomization-file", ks}} {
		args := append([]string{"diff", "ks", "flux-system", "--path", staging}, extra...)
		fluxOut, _ := flux.run(append(args, "--progress-bar=false")...)
		got, code := u.exitCode(args...)
		if code != 1 {
			t.Errorf("eddy %s: exit %d, want 1", strings.Join(args, " "), code)
		}
		e, f := eddyDiffReport(got), fluxDiffReport(fluxOut)
		if !slices.Equal(f.objects, want) {
			t.Fatalf("flux diff printed %q; the test expects %q", f.objects, want)
		}
		if !slices.Equal(e.objects, f.objects) {
			t.Errorf("eddy %s: objects %q, flux diff's %q", strings.Join(extra, " "), e.objects, f.objects)
		}
		if !maps.EqualFunc(e.fields, f.fields, maps.Equal) {
			t.Errorf("eddy %s: fields %v, flux diff's %v", strings.Join(extra, " "), e.fields, f.fields)
		}
	}
	// The same diff from the overlay's own directory, by a relative path.
	cmd := u.command("diff", "ks", "flux-system", "--path", ".")
	cmd.Dir = staging
	out, _ := cmd.CombinedOutput()
	if got := eddyDiffReport(string(out)); !slices.Equal(got.objects, want) {
		t.Errorf("eddy diff --path . in the overlay printed\n%s", out)
	}
}

func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
