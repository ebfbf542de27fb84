package kustomize

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/eddyops/eddy/pkg/redact"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var (
	// urlScheme matches a URL: kustomize fetches http(s) files itself and
	// clones ssh, http(s) and file repositories with git.
	urlScheme = regexp.MustCompile(`(?i)^(git::)?[a-z][a-z0-9+.-]*://`)
	// repoHost matches kustomize's scheme-less repository forms: SCP-style
	// user@host:org/repo and github.com/org/repo (an optional go-getter
	// "git::" prefix is ignored by kustomize).
	repoHost = regexp.MustCompile(`(?i)^(git::)?([a-z][a-z0-9-]*@|github\.com[/:])`)
	// repoQuery matches the query parameters of a remote target.
	repoQuery = regexp.MustCompile(`\?(.*&)?(ref|version|submodules|timeout)=`)
)

// refuseRemote walks the kustomizations reachable from dir (its own
// kustomization file, then those of the local directories it names in
// resources, bases, components, generators, transformers and validators)
// and returns an error for the first entry kustomize would fetch from
// outside the artifact:
//
//	remote resource 'https://github.com/x/y//base?ref=v1' in apps/kustomization.yaml: remote bases are not supported by Eddy yet
//
// (resource, base, component, ... after the field; credentials in the entry
// masked as pkg/redact does). An entry is remote if
// it is a URL, has kustomize's repository syntax (user@host:, github.com/,
// "//" between repository and path, ?ref=), or, for the fields kustomize
// reads as files (patches, openapi, configurations, crds, replacements,
// generator files), is a URL. Eddy does not support remote bases yet, so
// nothing is cloned or downloaded: krusty is not run on such a
// kustomization at all. A kustomization file that does not parse is an
// error, as kustomize would fail on it too.
func refuseRemote(fs filesys.FileSystem, dir string) error {
	seen := map[string]bool{}
	var walk func(dir string) error
	walk = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		kfile := FindKustomizationFile(fs, dir)
		if kfile == "" {
			return nil
		}
		data, err := fs.ReadFile(kfile)
		if err != nil {
			return err
		}
		var k kustypes.Kustomization
		if err := yaml.Unmarshal(data, &k); err != nil {
			return fmt.Errorf("%s: %w", kfile, err)
		}
		refused := func(what, entry string) error {
			return fmt.Errorf("remote %s '%s' in %s: remote bases are not supported by Eddy yet", what, redact.Message(redact.URL(entry)), strings.TrimPrefix(kfile, "/"))
		}
		// Entries kustomize loads as a file, a directory or a repository.
		for _, f := range []struct {
			what    string
			entries []string
		}{
			{"resource", k.Resources}, {"base", k.Bases}, {"component", k.Components},
			{"generator", k.Generators}, {"transformer", k.Transformers}, {"validator", k.Validators},
		} {
			for _, e := range f.entries {
				if strings.Contains(e, "\n") {
					continue // an inline generator, transformer or validator
				}
				if isRemoteTarget(fs, dir, e) {
					return refused(f.what, e)
				}
				if err := walk(resolve(dir, e)); err != nil {
					return err
				}
			}
		}
		// Entries kustomize only reads as files: remote if a URL.
		files := map[string][]string{
			"patch":         nil,
			"openapi":       {k.OpenAPI["path"]},
			"configuration": k.Configurations,
			"crd":           k.Crds,
			"replacement":   nil,
			"file":          nil,
		}
		for _, p := range k.PatchesStrategicMerge {
			files["patch"] = append(files["patch"], string(p))
		}
		for _, p := range append(k.Patches, k.PatchesJson6902...) {
			files["patch"] = append(files["patch"], p.Path)
		}
		for _, r := range k.Replacements {
			files["replacement"] = append(files["replacement"], r.Path)
		}
		for _, g := range k.ConfigMapGenerator {
			files["file"] = append(files["file"], kvFiles(g.KvPairSources)...)
		}
		for _, g := range k.SecretGenerator {
			files["file"] = append(files["file"], kvFiles(g.KvPairSources)...)
		}
		for _, what := range []string{"patch", "openapi", "configuration", "crd", "replacement", "file"} {
			for _, e := range files[what] {
				if !strings.Contains(e, "\n") && urlScheme.MatchString(strings.TrimSpace(e)) {
					return refused(what, e)
				}
			}
		}
		return nil
	}
	return walk(dir)
}

// RefuseRemote is the check Build makes before kustomize runs, for a
// caller running Run on a filesystem of its own rooted at "/": it returns
// the error naming the first entry, of the kustomizations reachable from
// dir, that kustomize would fetch from outside fs (see refuseRemote).
func RefuseRemote(fs filesys.FileSystem, dir string) error {
	return refuseRemote(fs, dir)
}

// kvFiles lists the files a generator reads; a file source may be
// "key=path".
func kvFiles(s kustypes.KvPairSources) []string {
	out := append([]string{s.EnvSource}, s.EnvSources...)
	for _, f := range s.FileSources {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		out = append(out, f)
	}
	return out
}

// resolve is where kustomize looks for entry of the kustomization in dir.
func resolve(dir, entry string) string {
	if path.IsAbs(entry) {
		return clean(entry)
	}
	return path.Join(dir, entry)
}

// isRemoteTarget reports whether kustomize would fetch a resources-like
// entry from outside the artifact. It follows kustomize's order: a URL is
// fetched before anything local is tried; otherwise a local file wins, then
// a repository form, then a local directory.
func isRemoteTarget(fs filesys.FileSystem, dir, entry string) bool {
	e := strings.TrimSpace(entry)
	if urlScheme.MatchString(e) {
		return true
	}
	p := resolve(dir, e)
	if fs.Exists(p) && !fs.IsDir(p) {
		return false
	}
	if repoHost.MatchString(e) {
		return true
	}
	if fs.Exists(p) {
		return false
	}
	repo, _, _ := strings.Cut(e, "?")
	return strings.Contains(repo, "//") || repoQuery.MatchString(e)
}
