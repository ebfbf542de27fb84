package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// SymlinkError is a symbolic link that TarOptions.FollowSymlinks refuses.
type SymlinkError struct {
	// Path is the link's slash-separated path relative to the root, where
	// it lies in the tree (not the name a linked directory copies it to).
	Path string
	// Dangling: the link resolves to nothing (its target is missing, or
	// links loop); otherwise it points outside the root.
	Dangling bool
}

// Error is Argo CD's message for a link out of the repository
// ("repository contains out-of-bounds symlinks. file: <path>", Argo CD's
// repo-server), or "repository contains dangling symlinks. file: <path>".
func (e *SymlinkError) Error() string {
	if e.Dangling {
		return "repository contains dangling symlinks. file: " + e.Path
	}
	return "repository contains out-of-bounds symlinks. file: " + e.Path
}

// ancestors is the set of real directories from the root down to the
// parent of the entry rel of the walk: what a link may not copy again.
func (a *archiver) ancestors(rel string) map[string]bool {
	on := map[string]bool{a.root: true}
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		on[filepath.Join(a.root, d)] = true
	}
	return on
}

// link archives the link named linkName in the real directory parent as
// what it points to, under the slash-separated name; onPath holds the real
// directories being copied, where a cycle is cut.
func (a *archiver) link(parent, linkName, name string, onPath map[string]bool) error {
	p := filepath.Join(parent, linkName)
	info, statErr := os.Stat(p)
	isDir := statErr == nil && info.IsDir()
	excluded := a.opts.Exclude != nil && a.opts.Exclude(name, isDir)
	if excluded && !isDir {
		return nil // an excluded file is not read, wherever it points
	}
	real, err := a.resolve(parent, linkName)
	if err != nil {
		return err
	}
	if info, err = os.Stat(real); err != nil {
		return fmt.Errorf("archiving %s: %w", name, pathless(err))
	}
	switch {
	case info.IsDir():
		if !excluded {
			if err := a.countLinked(name, 0); err != nil {
				return err
			}
			if err := a.write(info, real, name); err != nil {
				return err
			}
		}
		if onPath[real] {
			return nil // a cycle: the directory is being copied already
		}
		return a.tree(real, name, onPath)
	case info.Mode().IsRegular():
		if err := a.countLinked(name, info.Size()); err != nil {
			return err
		}
		return a.write(info, real, name)
	}
	return nil // a special file, left out as the walk leaves it out
}

// tree copies the real directory dir below name, following links; entries
// are excluded by their names below name.
func (a *archiver) tree(dir, name string, onPath map[string]bool) error {
	onPath[dir] = true
	defer delete(onPath, dir)
	entries, err := os.ReadDir(dir) // sorted by name, as the walk
	if err != nil {
		return fmt.Errorf("archiving %s: %w", name, pathless(err))
	}
	for _, e := range entries {
		p, n := filepath.Join(dir, e.Name()), name+"/"+e.Name()
		switch {
		case e.IsDir() && e.Name() == ".git" && !a.opts.EnterGit:
			continue
		case e.Type()&fs.ModeSymlink != 0:
			err = a.link(dir, e.Name(), n, onPath)
		case e.IsDir():
			err = a.linkedDir(p, n, onPath)
		case e.Type().IsRegular():
			err = a.linkedFile(e, p, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// linkedDir archives the real directory p of a linked tree as name.
func (a *archiver) linkedDir(p, name string, onPath map[string]bool) error {
	if a.opts.Exclude == nil || !a.opts.Exclude(name, true) {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("archiving %s: %w", name, pathless(err))
		}
		if err := a.countLinked(name, 0); err != nil {
			return err
		}
		if err := a.write(info, p, name); err != nil {
			return err
		}
	}
	return a.tree(p, name, onPath)
}

// linkedFile archives the regular file p of a linked tree as name.
func (a *archiver) linkedFile(e fs.DirEntry, p, name string) error {
	if a.opts.Exclude != nil && a.opts.Exclude(name, false) {
		return nil
	}
	info, err := e.Info()
	if err != nil {
		return fmt.Errorf("archiving %s: %w", name, pathless(err))
	}
	if err := a.countLinked(name, info.Size()); err != nil {
		return err
	}
	return a.write(info, p, name)
}

// resolve returns the real path of the link linkName in the real
// directory parent, or a *SymlinkError: an absolute target, a target whose
// path as written climbs above the root at any step (as Argo CD judges
// links), a resolved path outside the root or in .git (unless EnterGit),
// or nothing to resolve to.
func (a *archiver) resolve(parent, linkName string) (string, error) {
	p := filepath.Join(parent, linkName)
	rel := a.rel(p)
	target, err := os.Readlink(p)
	if err != nil {
		return "", fmt.Errorf("archiving %s: %w", rel, pathless(err))
	}
	out := &SymlinkError{Path: rel}
	if filepath.IsAbs(target) || path.IsAbs(filepath.ToSlash(target)) {
		return "", out
	}
	cur := path.Dir(rel)
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if cur = path.Join(cur, part); cur == ".." || strings.HasPrefix(cur, "../") {
			return "", out
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrPermission) {
		return "", fmt.Errorf("archiving %s: %w", rel, pathless(err))
	}
	if err != nil {
		return "", &SymlinkError{Path: rel, Dangling: true}
	}
	r := a.rel(real)
	if r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) {
		return "", out
	}
	if !a.opts.EnterGit && (r == ".git" || strings.HasPrefix(r, ".git/") || strings.Contains(r, "/.git/") || strings.HasSuffix(r, "/.git")) {
		return "", out // .git is not part of the archive
	}
	return real, nil
}

// rel is the slash-separated path of the absolute p relative to the root.
func (a *archiver) rel(p string) string {
	r, err := filepath.Rel(a.root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

// countLinked counts one entry of size bytes added through a link and
// fails past DefaultLimits: links to directories can multiply a tree.
func (a *archiver) countLinked(name string, size int64) error {
	a.linkedEntries++
	a.linkedBytes += size
	if a.linkedEntries > DefaultLimits.MaxFiles || a.linkedBytes > DefaultLimits.MaxBytes {
		return fmt.Errorf("archiving %s: symbolic links add more than %d entries or %d bytes", name, DefaultLimits.MaxFiles, DefaultLimits.MaxBytes)
	}
	return nil
}

// pathless is err without the path an *fs.PathError carries, so messages
// do not name the checkout's directory.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
