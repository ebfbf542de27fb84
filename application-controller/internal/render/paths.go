package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// cleanRel is a slash-separated relative path, cleaned; "" is ".".
func cleanRel(p string) string {
	return path.Clean(filepath.ToSlash(p))
}

// escapes reports whether the cleaned relative path rel leaves its base.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, "../")
}

// outside is the error of a path, as written, that leaves the repository.
func outside(p string) error {
	return fmt.Errorf("path '%s' is outside the repository", p)
}

// within reports whether the absolute path p is root or below it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// inRoot resolves p, as written in the source, inside the repository at
// root (absolute, symlinks already resolved): relative to the
// slash-separated directory base (relative to root), or to root when p is
// absolute, as Argo CD resolves value files. Symbolic links are followed
// and must stay inside root. A path that does not exist is returned as
// joined, for the caller's own "not found" message. A path that leaves root
// is the error "path '<p>' is outside the repository".
func inRoot(root, base, p string) (string, error) {
	slash := filepath.ToSlash(p)
	rel := path.Join(base, slash)
	if path.IsAbs(slash) {
		rel = path.Clean(strings.TrimLeft(slash, "/"))
		if rel == "" {
			rel = "."
		}
	}
	if escapes(rel) {
		return "", outside(p)
	}
	abs := filepath.Join(root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return abs, nil
	}
	if err != nil {
		return "", fmt.Errorf("path '%s': %s", p, scrub(err.Error(), root))
	}
	if !within(root, real) {
		return "", outside(p)
	}
	return real, nil
}

// relTo is the slash-separated path of abs relative to root, for messages.
func relTo(root, abs string) string {
	r, err := filepath.Rel(root, abs)
	if err != nil {
		return filepath.Base(abs)
	}
	return filepath.ToSlash(r)
}

// symlinks remembers the checkouts checkSymlinks passed, by root: a
// checkout is an unpacked artifact, content-addressed and never changed,
// so it is walked once, not at every render of every Application on it
// (the walk was half the CPU of comparing 1,000 Applications on one
// repository). Failures are not remembered; at most symlinkRoots roots
// are kept (then the memory starts again).
var symlinks = &checkedRoots{ok: map[string]bool{}}

const symlinkRoots = 4096

type checkedRoots struct {
	mu sync.Mutex
	ok map[string]bool
}

func (c *checkedRoots) check(root string) error {
	c.mu.Lock()
	done := c.ok[root]
	c.mu.Unlock()
	if done {
		return nil
	}
	if err := checkSymlinks(root); err != nil {
		return err
	}
	c.mu.Lock()
	if len(c.ok) >= symlinkRoots {
		c.ok = map[string]bool{}
	}
	c.ok[root] = true
	c.mu.Unlock()
	return nil
}

// checkSymlinks refuses a checkout holding a symbolic link that is
// absolute or points above the repository root, as Argo CD checks every
// checkout before it renders, with its message "repository contains
// out-of-bounds symlinks. file: <file>". A link's target is judged as
// written, relative to the link's directory, so chains of in-repository
// links are fine. source-controller resolves a Git checkout's links before
// the artifact exists (sourcev1.SymlinksAnnotation) and extraction refuses
// links, so an unpacked artifact holds none: this check keeps a render
// from leaving whatever directory it is handed.
func checkSymlinks(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel := relTo(root, p)
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("symlink '%s': cannot read it", rel)
		}
		t := filepath.ToSlash(target)
		if path.IsAbs(t) || filepath.IsAbs(target) || escapes(path.Join(path.Dir(rel), t)) {
			return fmt.Errorf("repository contains out-of-bounds symlinks. file: %s", rel)
		}
		return nil
	})
}
