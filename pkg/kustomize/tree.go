package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/eddyops/eddy/pkg/artifact"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Tree is an immutable in-memory copy of an artifact's files, rooted at "/".
// Builds read it through a private writable layer, so concurrent builds of
// one artifact share a single Tree and nothing is extracted to disk; and as
// nothing else is reachable, a kustomization cannot read the controller's
// files (`resources: [/etc/passwd]`, `../../`).
type Tree struct {
	files map[string][]byte   // "/apps/a.yaml" → content
	dirs  map[string][]string // "/apps" → sorted child names; "/" always present
	size  int64
}

// Size is the total file content held, in bytes.
func (t *Tree) Size() int64 { return t.size }

// IsDir reports whether the tree holds the directory p (slash-separated,
// relative to the root or absolute from it; "." and "/" are the root).
func (t *Tree) IsDir(p string) bool {
	_, ok := t.dirs[clean(p)]
	return ok
}

type treeBuilder struct {
	files    map[string][]byte
	children map[string]map[string]bool
	size     int64
}

func newTreeBuilder() *treeBuilder {
	return &treeBuilder{files: map[string][]byte{}, children: map[string]map[string]bool{"/": {}}}
}

func (b *treeBuilder) addDir(p string) {
	if _, ok := b.children[p]; ok || p == "/" {
		return
	}
	b.children[p] = map[string]bool{}
	parent := path.Dir(p)
	b.addDir(parent)
	b.children[parent][path.Base(p)] = true
}

func (b *treeBuilder) addFile(p string, data []byte) error {
	if _, ok := b.children[p]; ok {
		return fmt.Errorf("%w: %q is both a file and a directory", artifact.ErrUnsafeArchive, p[1:])
	}
	parent := path.Dir(p)
	b.addDir(parent)
	b.children[parent][path.Base(p)] = true
	if old, ok := b.files[p]; ok {
		b.size -= int64(len(old))
	}
	b.files[p] = data
	b.size += int64(len(data))
	return nil
}

func (b *treeBuilder) tree() *Tree {
	t := &Tree{files: b.files, dirs: make(map[string][]string, len(b.children)), size: b.size}
	for d, c := range b.children {
		names := make([]string, 0, len(c))
		for n := range c {
			names = append(names, n)
		}
		sort.Strings(names)
		t.dirs[d] = names
	}
	return t
}

// ReadTree reads a tar.gz artifact into a Tree with the checks and limits
// of artifact.ReadArchive.
func ReadTree(r io.Reader, lim artifact.Limits) (*Tree, error) {
	b := newTreeBuilder()
	err := artifact.ReadArchive(r, lim, func(e artifact.Entry) error {
		p := "/" + e.Name
		if e.Name == "." {
			return nil
		}
		if e.Dir {
			if _, ok := b.files[p]; ok {
				return fmt.Errorf("%w: %q is both a file and a directory", artifact.ErrUnsafeArchive, e.Name)
			}
			b.addDir(p)
			return nil
		}
		data := make([]byte, e.Size)
		if _, err := io.ReadFull(e.Content, data); err != nil {
			return fmt.Errorf("reading artifact: %w", err)
		}
		return b.addFile(p, data)
	})
	if err != nil {
		return nil, err
	}
	return b.tree(), nil
}

// ReadDirTree copies a directory on disk into a Tree; symbolic links and
// special files are skipped, as an artifact holds none.
func ReadDirTree(dir string) (*Tree, error) {
	b := newTreeBuilder()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		vp := "/" + filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			b.addDir(vp)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return b.addFile(vp, data)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b.tree(), nil
}

// layerFS is a kustomize filesystem over a Tree plus the files a build
// writes (its generated or merged kustomization.yaml), which stay private to
// the build. Relative paths are taken from "/".
type layerFS struct {
	base  *Tree
	mu    sync.Mutex
	files map[string][]byte
	dirs  map[string]bool
	// onRead, when set, sees each artifact file the first time it is read
	// and may replace its content (in this layer, in memory): the build's
	// SOPS decryption of the resource files kustomize reads. Its first
	// error is kept in readErr, for Build to report rather than
	// kustomize's wrapping of it.
	onRead  func(p string, data []byte) ([]byte, error)
	seen    map[string]bool
	readErr error
}

var _ filesys.FileSystem = (*layerFS)(nil)

func newLayerFS(t *Tree) *layerFS {
	return &layerFS{base: t, files: map[string][]byte{}, dirs: map[string]bool{}}
}

func clean(p string) string { return path.Clean("/" + filepath.ToSlash(p)) }

func notExist(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
}

func (l *layerFS) isDir(p string) bool {
	_, ok := l.base.dirs[p]
	return ok || l.dirs[p]
}

func (l *layerFS) file(p string) ([]byte, bool) {
	if d, ok := l.files[p]; ok {
		return d, true
	}
	d, ok := l.base.files[p]
	return d, ok
}

// read is file for a read by kustomize: the first read of an artifact
// file passes it through onRead.
func (l *layerFS) read(p string) ([]byte, bool, error) {
	if d, ok := l.files[p]; ok || l.onRead == nil || l.seen[p] {
		if ok {
			return d, true, nil
		}
		d, ok := l.base.files[p]
		return d, ok, nil
	}
	d, ok := l.base.files[p]
	if !ok {
		return nil, false, nil
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[p] = true
	out, err := l.onRead(p, d)
	if err != nil {
		if l.readErr == nil {
			l.readErr = err
		}
		return nil, true, err
	}
	if out != nil {
		l.files[p] = out
		return out, true, nil
	}
	return d, true, nil
}

func (l *layerFS) children(p string) []string {
	names := append([]string(nil), l.base.dirs[p]...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	add := func(q string) {
		if path.Dir(q) == p && q != p && !seen[path.Base(q)] {
			seen[path.Base(q)] = true
			names = append(names, path.Base(q))
		}
	}
	for q := range l.files {
		add(q)
	}
	for q := range l.dirs {
		add(q)
	}
	sort.Strings(names)
	return names
}

func (l *layerFS) write(p string, data []byte) error {
	if l.isDir(p) {
		return &fs.PathError{Op: "write", Path: p, Err: errors.New("is a directory")}
	}
	if !l.isDir(path.Dir(p)) {
		return notExist("write", p)
	}
	l.files[p] = append([]byte(nil), data...)
	return nil
}

func (l *layerFS) mkdir(p string, all bool) error {
	if _, ok := l.file(p); ok {
		return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
	}
	if l.isDir(p) {
		if all {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
	}
	if parent := path.Dir(p); !l.isDir(parent) {
		if !all {
			return notExist("mkdir", p)
		}
		if err := l.mkdir(parent, true); err != nil {
			return err
		}
	}
	l.dirs[p] = true
	return nil
}

// Create returns a file whose content is written to the layer on Close.
func (l *layerFS) Create(p string) (filesys.File, error) {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.write(p, nil); err != nil {
		return nil, err
	}
	return &memFile{name: p, w: &bytes.Buffer{}, fs: l}, nil
}

func (l *layerFS) Mkdir(p string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mkdir(clean(p), false)
}

func (l *layerFS) MkdirAll(p string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mkdir(clean(p), true)
}

// RemoveAll is refused: a build only adds files, and the artifact is shared.
func (l *layerFS) RemoveAll(p string) error {
	return &fs.PathError{Op: "remove", Path: clean(p), Err: fs.ErrPermission}
}

func (l *layerFS) Open(p string) (filesys.File, error) {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok, err := l.read(p)
	if err != nil {
		return nil, err
	}
	if ok {
		return &memFile{name: p, r: bytes.NewReader(d), size: int64(len(d))}, nil
	}
	if l.isDir(p) {
		return &memFile{name: p, dir: true}, nil
	}
	return nil, notExist("open", p)
}

func (l *layerFS) IsDir(p string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isDir(clean(p))
}

func (l *layerFS) ReadDir(p string) ([]string, error) {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.isDir(p) {
		return nil, notExist("readdir", p)
	}
	return l.children(p), nil
}

func (l *layerFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isDir(p) {
		return filesys.ConfirmedDir(p), "", nil
	}
	if _, ok := l.file(p); ok {
		return filesys.ConfirmedDir(path.Dir(p)), path.Base(p), nil
	}
	return "", "", notExist("stat", p)
}

func (l *layerFS) Exists(p string) bool {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.file(p)
	return ok || l.isDir(p)
}

// Glob matches as filepath.Glob does, over the tree and the layer.
func (l *layerFS) Glob(pattern string) ([]string, error) {
	pattern = clean(pattern)
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.glob(pattern), nil
}

func (l *layerFS) glob(pattern string) []string {
	if !strings.ContainsAny(pattern, `*?[\`) {
		if _, ok := l.file(pattern); ok || l.isDir(pattern) {
			return []string{pattern}
		}
		return nil
	}
	dir, base := path.Split(pattern)
	dir = clean(dir)
	dirs := []string{dir}
	if strings.ContainsAny(dir, `*?[\`) {
		dirs = l.glob(dir)
	}
	var out []string
	for _, d := range dirs {
		if !l.isDir(d) {
			continue
		}
		for _, n := range l.children(d) {
			if ok, _ := path.Match(base, n); ok {
				out = append(out, path.Join(d, n))
			}
		}
	}
	return out
}

func (l *layerFS) ReadFile(p string) ([]byte, error) {
	p = clean(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok, err := l.read(p)
	if err != nil {
		return nil, err
	}
	if ok {
		return append([]byte(nil), d...), nil
	}
	if l.isDir(p) {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("is a directory")}
	}
	return nil, notExist("open", p)
}

func (l *layerFS) WriteFile(p string, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.write(clean(p), data)
}

// Walk visits p and what is below it in lexical order, as filepath.Walk.
func (l *layerFS) Walk(p string, fn filepath.WalkFunc) error {
	p = clean(p)
	info, err := l.stat(p)
	if err != nil {
		err = fn(p, nil, err)
	} else {
		err = l.walk(p, info, fn)
	}
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

func (l *layerFS) stat(p string) (fs.FileInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.file(p); ok {
		return fileInfo{name: path.Base(p), size: int64(len(d))}, nil
	}
	if l.isDir(p) {
		return fileInfo{name: path.Base(p), dir: true}, nil
	}
	return nil, notExist("lstat", p)
}

func (l *layerFS) walk(p string, info fs.FileInfo, fn filepath.WalkFunc) error {
	if !info.IsDir() {
		return fn(p, info, nil)
	}
	if err := fn(p, info, nil); err != nil {
		return err
	}
	l.mu.Lock()
	names := l.children(p)
	l.mu.Unlock()
	for _, n := range names {
		q := path.Join(p, n)
		ci, err := l.stat(q)
		if err != nil {
			if err := fn(q, nil, err); err != nil && !errors.Is(err, filepath.SkipDir) {
				return err
			}
			continue
		}
		if err := l.walk(q, ci, fn); err != nil {
			if !ci.IsDir() || !errors.Is(err, filepath.SkipDir) {
				return err
			}
		}
	}
	return nil
}

// memFile is an open file of a layerFS: a reader over its content, or a
// buffer written to the layer on Close.
type memFile struct {
	name string
	r    *bytes.Reader
	w    *bytes.Buffer
	fs   *layerFS
	size int64
	dir  bool
}

func (f *memFile) Read(p []byte) (int, error) {
	if f.r == nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.r.Read(p)
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.w == nil {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	return f.w.Write(p)
}

func (f *memFile) Close() error {
	if f.w == nil {
		return nil
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.fs.write(f.name, f.w.Bytes())
}

func (f *memFile) Stat() (os.FileInfo, error) {
	size := f.size
	if f.w != nil {
		size = int64(f.w.Len())
	}
	return fileInfo{name: path.Base(f.name), size: size, dir: f.dir}, nil
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
