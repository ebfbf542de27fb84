package inspect

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/kustomize"
)

// LocalSource is a local directory seen as kustomize-controller sees the
// source artifact that holds it.
type LocalSource struct {
	// Root is the directory the artifact would be made of (absolute).
	Root string
	// Path is the directory within Root, slash-separated ("." for Root):
	// what spec.path says.
	Path string
	// Tree holds Root's files as source-controller packs them.
	Tree *kustomize.Tree
	// Confined is true when no Git repository or working directory above
	// the directory was found, so the build reads only the directory.
	Confined bool
}

// ReadLocalSource reads the source holding dir, so that a local build can
// reach every file a build in the cluster reaches (`../base`,
// `../../components/x`) and no other. The root is the Git repository
// that holds dir (the nearest directory above it with a .git), else the
// working directory when it holds dir (as `flux build --in-memory-build`
// roots its build), else dir itself. Its files are packed and read back
// as source-controller's artifact and kustomize-controller's reader do:
// .git and the .sourceignore rules (or Flux's default exclusions) left
// out, symbolic links dropped, at most 100 MiB of content. Errors: dir is
// not a directory, or the artifact's checks and limits.
func ReadLocalSource(dir string) (*LocalSource, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("invalid resource path %q: --path must be a local directory", dir)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("invalid resource path %q: --path must be a local directory", dir)
	}
	root := sourceRoot(abs)
	tree, err := packTree(root)
	if err != nil && root != abs && !isRepository(root) {
		// The working directory was only a guess at the source (it may be
		// $HOME or /): when it cannot be packed, dir alone is read.
		root = abs
		tree, err = packTree(root)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the source at %s: %w", root, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	rel = filepath.ToSlash(rel)
	if !tree.IsDir(rel) {
		rules := ".sourceignore, or Flux's default exclusions"
		if isRepository(root) {
			rules = "Git ignores it, or .sourceignore, or Flux's default exclusions"
		}
		return nil, fmt.Errorf("invalid resource path %q: the source at %s leaves it out (%s)", dir, root, rules)
	}
	return &LocalSource{Root: root, Path: rel, Tree: tree, Confined: root == abs && !isRepository(root)}, nil
}

// sourceRoot is the root ReadLocalSource reads for the directory abs
// (absolute, symbolic links resolved).
func sourceRoot(abs string) string {
	for d := abs; ; d = filepath.Dir(d) {
		if isRepository(d) {
			return d
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil && within(wd, abs) {
			return wd
		}
	}
	return abs
}

// isRepository reports whether dir is a Git work tree's root (.git is a
// directory, or a file in a linked work tree).
func isRepository(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// packTree packs root as source-controller does and reads the archive
// back as kustomize-controller does. In a Git work tree, what Git ignores
// is left out too: source-controller packs a clone, which never has it.
func packTree(root string) (*kustomize.Tree, error) {
	ignore, err := artifact.LoadIgnore(root, nil)
	if err != nil {
		return nil, err
	}
	exclude := ignore.Match
	if isRepository(root) {
		git, err := artifact.LoadGitIgnore(root)
		if err != nil {
			return nil, err
		}
		exclude = func(rel string, isDir bool) bool { return ignore.Match(rel, isDir) || git.Match(rel, isDir) }
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(artifact.WriteTarGz(pw, root, artifact.TarOptions{Exclude: exclude})) }()
	tree, err := kustomize.ReadTree(pr, artifactLimits)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer when the reader gave up
	return tree, err
}
