package oci

import (
	"fmt"
	"os"
	"path/filepath"
)

// ResolveSymlinks copies the tree at path (or the single file path) into a
// new temporary directory with every symbolic link replaced by what it
// points to, so that Build keeps what links name (Build itself leaves links
// out): `--resolve-symlinks` of `flux build|push artifact`, for trees of
// links such as Nix makes. A link cycle is cut where it comes back to a
// directory being copied; special files are left out. It returns the path
// to build (the directory, or the copied file inside it) and a cleanup that
// removes the copy. Flux compatible (flux v2.9.5 resolveSymlinks).
func ResolveSymlinks(path string) (string, func(), error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", nil, fmt.Errorf("resolving symlinks of %s: %w", path, pathless(err))
	}
	tmp, err := os.MkdirTemp("", "eddy-artifact-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	if !info.IsDir() {
		dst := filepath.Join(tmp, filepath.Base(abs))
		if err := copyFile(dst, abs, info.Mode().Perm()); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("resolving symlinks of %s: %w", path, pathless(err))
		}
		return dst, cleanup, nil
	}
	if err := copyResolved(abs, tmp, map[string]bool{}); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("resolving symlinks of %s: %w", path, err)
	}
	return tmp, cleanup, nil
}

// copyResolved copies the directory src into dst following links; onPath
// holds the real paths of the directories being copied, to cut cycles.
func copyResolved(src, dst string, onPath map[string]bool) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return pathless(err)
	}
	if onPath[real] {
		return nil
	}
	onPath[real] = true
	defer delete(onPath, real)
	entries, err := os.ReadDir(src)
	if err != nil {
		return pathless(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		info, err := os.Stat(from) // follows links
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), pathless(err))
		}
		switch {
		case info.IsDir():
			if err := os.MkdirAll(to, info.Mode().Perm()); err != nil {
				return pathless(err)
			}
			if err := copyResolved(from, to, onPath); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(to, from, info.Mode().Perm()); err != nil {
				return pathless(err)
			}
		}
	}
	return nil
}
