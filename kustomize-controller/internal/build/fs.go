package build

import (
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// confinedFS is the on-disk filesystem limited to one root directory: every
// path kustomize touches must resolve inside it, so a kustomization cannot
// read the controller's files (`resources: [/etc/passwd]`, `../../`).
type confinedFS struct {
	root string
	fs   filesys.FileSystem
}

func newConfinedFS(root string) (*confinedFS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &confinedFS{root: real, fs: filesys.MakeFsOnDisk()}, nil
}

// check is lexical: the artifact was extracted without symbolic links
// (pkg/artifact refuses them), so no path can leave the root through one.
func (c *confinedFS) check(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if abs != c.root && !strings.HasPrefix(abs, c.root+string(filepath.Separator)) {
		return fmt.Errorf("path %q is outside the artifact", c.rel(path))
	}
	return nil
}

// rel shows a path relative to the root, so errors do not reveal the
// controller's temporary directories.
func (c *confinedFS) rel(path string) string {
	if r, err := filepath.Rel(c.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return filepath.Base(path)
}

func (c *confinedFS) Create(path string) (filesys.File, error) {
	if err := c.check(path); err != nil {
		return nil, err
	}
	return c.fs.Create(path)
}

func (c *confinedFS) Mkdir(path string) error {
	if err := c.check(path); err != nil {
		return err
	}
	return c.fs.Mkdir(path)
}

func (c *confinedFS) MkdirAll(path string) error {
	if err := c.check(path); err != nil {
		return err
	}
	return c.fs.MkdirAll(path)
}

func (c *confinedFS) RemoveAll(path string) error {
	if err := c.check(path); err != nil {
		return err
	}
	return c.fs.RemoveAll(path)
}

func (c *confinedFS) Open(path string) (filesys.File, error) {
	if err := c.check(path); err != nil {
		return nil, err
	}
	return c.fs.Open(path)
}

func (c *confinedFS) IsDir(path string) bool { return c.check(path) == nil && c.fs.IsDir(path) }

func (c *confinedFS) ReadDir(path string) ([]string, error) {
	if err := c.check(path); err != nil {
		return nil, err
	}
	return c.fs.ReadDir(path)
}

func (c *confinedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if err := c.check(path); err != nil {
		return "", "", err
	}
	d, f, err := c.fs.CleanedAbs(path)
	if err != nil {
		return d, f, err
	}
	if err := c.check(string(d)); err != nil {
		return "", "", err
	}
	return d, f, nil
}

func (c *confinedFS) Exists(path string) bool { return c.check(path) == nil && c.fs.Exists(path) }

func (c *confinedFS) Glob(pattern string) ([]string, error) {
	if err := c.check(pattern); err != nil {
		return nil, err
	}
	matches, err := c.fs.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		if c.check(m) == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (c *confinedFS) ReadFile(path string) ([]byte, error) {
	if err := c.check(path); err != nil {
		return nil, err
	}
	return c.fs.ReadFile(path)
}

func (c *confinedFS) WriteFile(path string, data []byte) error {
	if err := c.check(path); err != nil {
		return err
	}
	return c.fs.WriteFile(path, data)
}

func (c *confinedFS) Walk(path string, fn filepath.WalkFunc) error {
	if err := c.check(path); err != nil {
		return err
	}
	return c.fs.Walk(path, fn)
}
