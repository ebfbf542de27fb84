// Package artifact is Eddy's artifact handling: the deterministic tar.gz
// archive of a source tree, its ignore rules, and the storage that keeps
// artifacts on disk under content-addressed names, serves them over HTTP,
// verifies their digests and collects the old ones.
//
// Flux compatible: the storage layout `<kind>/<namespace>/<name>/<file>`, the
// URL `http://<advertised address>/<path>` and the digest `sha256:<hex>` over
// the compressed bytes are those of source-controller (contract §2).
package artifact

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/faultpoint"
	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Storage keeps artifacts in a directory tree and builds their URLs.
type Storage struct {
	// BasePath is the root directory (--storage-path).
	BasePath string
	// AdvAddr is the address clients use to reach the file server
	// (--storage-adv-addr), e.g. `source-controller.flux-system.svc.cluster.local.`
	// or `127.0.0.1:9090`; one that starts with http:// or https:// is used as
	// the URL prefix as it is.
	AdvAddr string
	// RetentionTTL: artifacts other than the current one older than this are
	// deleted by GarbageCollect (--artifact-retention-ttl, Flux: 60s).
	RetentionTTL time.Duration
	// RetentionRecords: GarbageCollect keeps at most this many files per
	// object, the current one included (--artifact-retention-records, Flux: 2).
	RetentionRecords int
	// MaxBytes bounds the bytes the storage holds (Usage): a write that
	// would exceed it fails with ErrStorageFull and keeps nothing; 0 for no
	// bound (Flux has none).
	MaxBytes int64
}

// ErrDigestMismatch means an artifact's bytes no longer match its recorded digest.
var ErrDigestMismatch = errors.New("artifact digest mismatch")

// NewStorage creates the base directory if missing and returns a Storage.
func NewStorage(basePath, advAddr string, ttl time.Duration, records int) (*Storage, error) {
	abs, err := filepath.Abs(basePath)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("creating storage directory: %w", err)
	}
	return &Storage{BasePath: abs, AdvAddr: advAddr, RetentionTTL: ttl, RetentionRecords: records}, nil
}

// ObjectDir is the slash-separated storage path of one object's artifacts:
// `<lowercase kind>/<namespace>/<name>`.
func ObjectDir(kind, namespace, name string) string {
	return path.Join(strings.ToLower(kind), namespace, name)
}

// URL returns the HTTP URL of the artifact at the storage path p.
func (s *Storage) URL(p string) string {
	if strings.HasPrefix(s.AdvAddr, "http://") || strings.HasPrefix(s.AdvAddr, "https://") {
		return strings.TrimSuffix(s.AdvAddr, "/") + "/" + p
	}
	return "http://" + s.AdvAddr + "/" + p
}

// LocalPath returns the file of the artifact on disk.
func (s *Storage) LocalPath(a meta.Artifact) string {
	return filepath.Join(s.BasePath, filepath.FromSlash(a.Path))
}

// Archive writes the tree at root, minus what ignore excludes, as the
// artifact `<objectDir>/<fileName>` (written atomically with mode 0600, see
// Copy) and returns it with path, URL, revision, digest, size and
// lastUpdateTime set.
func (s *Storage) Archive(objectDir, fileName, revision, root string, ignore *Ignore) (*meta.Artifact, error) {
	return s.write(objectDir, fileName, revision, func(w io.Writer) error { return WriteArchive(w, root, ignore) })
}

// ArchiveWith is Archive with the archive's options: opts.Exclude for the
// ignore rules (Ignore.Match), opts.FollowSymlinks for links followed
// (TarOptions). A refused link is a *SymlinkError, and then no artifact is
// written (the previous ones stay).
func (s *Storage) ArchiveWith(objectDir, fileName, revision, root string, opts TarOptions) (*meta.Artifact, error) {
	return s.write(objectDir, fileName, revision, func(w io.Writer) error { return WriteTarGz(w, root, opts) })
}

// Copy writes the bytes of r as the artifact `<objectDir>/<fileName>` and
// returns it as Archive does: written to a temporary file in the same
// directory, then renamed, so readers never see a partial file; mode 0600;
// digest `sha256:<hex>` and size of the bytes written. Flux compatible
// (storage `Copy`, used for a HelmRepository's index).
func (s *Storage) Copy(objectDir, fileName, revision string, r io.Reader) (*meta.Artifact, error) {
	return s.write(objectDir, fileName, revision, func(w io.Writer) error { _, err := io.Copy(w, r); return err })
}

func (s *Storage) write(objectDir, fileName, revision string, fill func(io.Writer) error) (*meta.Artifact, error) {
	dir := filepath.Join(s.BasePath, filepath.FromSlash(objectDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, "."+fileName+".tmp-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(tmp, h)}
	if err := fill(cw); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := s.checkCapacity(cw.n); err != nil {
		return nil, err
	}
	faultpoint.Hit(faultpoint.SourceMidArtifactWrite) // test only: a kill before the rename
	if err := os.Rename(tmp.Name(), filepath.Join(dir, fileName)); err != nil {
		return nil, err
	}
	p := path.Join(objectDir, fileName)
	size := cw.n
	return &meta.Artifact{
		Path:           p,
		URL:            s.URL(p),
		Revision:       revision,
		Digest:         digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil)).String(),
		Size:           &size,
		LastUpdateTime: metav1.Now(),
	}, nil
}

// Symlink points the link linkName, in the directory of artifact a, at a's
// file (a relative link, replaced atomically by renaming a new link over
// it) and returns the link's URL: the stable address of the latest
// artifact, e.g. a HelmRepository's `…/index.yaml`. GarbageCollect leaves
// links alone. Flux compatible (storage `Symlink`).
func (s *Storage) Symlink(a meta.Artifact, linkName string) (string, error) {
	dir := filepath.Dir(s.LocalPath(a))
	tmp := filepath.Join(dir, "."+linkName+".tmp-link")
	_ = os.Remove(tmp) // left by a crash
	if err := os.Symlink(path.Base(a.Path), tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(dir, linkName)); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return s.URL(path.Join(path.Dir(a.Path), linkName)), nil
}

// Exists reports whether the artifact's file is in storage.
func (s *Storage) Exists(a meta.Artifact) bool {
	fi, err := os.Stat(s.LocalPath(a))
	return err == nil && fi.Mode().IsRegular()
}

// Verify re-hashes the artifact's file and returns an error wrapping
// ErrDigestMismatch when it does not match a.Digest.
func (s *Storage) Verify(a meta.Artifact) error {
	d, err := digest.Parse(a.Digest)
	if err != nil {
		return fmt.Errorf("artifact digest %q: %w", a.Digest, err)
	}
	f, err := os.Open(s.LocalPath(a))
	if err != nil {
		return err
	}
	defer f.Close()
	v := d.Verifier()
	if _, err := io.Copy(v, f); err != nil {
		return err
	}
	if !v.Verified() {
		return fmt.Errorf("%w: %s", ErrDigestMismatch, a.Path)
	}
	return nil
}

// GarbageCollect deletes the object's stored files other than current:
// first those older than RetentionTTL, then the oldest until at most
// RetentionRecords files remain, current included. It returns the deleted
// storage paths. Flux compatible (contract §2.4).
func (s *Storage) GarbageCollect(current meta.Artifact) ([]string, error) {
	dir := filepath.Dir(s.LocalPath(current))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type file struct {
		name string
		mod  time.Time
	}
	var candidates []file
	now := time.Now()
	var deleted []string
	remove := func(name string) error {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		deleted = append(deleted, path.Join(path.Dir(current.Path), name))
		return nil
	}
	currentName := path.Base(current.Path)
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == currentName {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") {
			// Temporary files of Archive: left behind only by a crash.
			if strings.Contains(e.Name(), ".tmp-") && now.Sub(info.ModTime()) > s.RetentionTTL {
				if err := remove(e.Name()); err != nil {
					return deleted, err
				}
			}
			continue
		}
		if now.Sub(info.ModTime()) > s.RetentionTTL {
			if err := remove(e.Name()); err != nil {
				return deleted, err
			}
			continue
		}
		candidates = append(candidates, file{e.Name(), info.ModTime()})
	}
	keep := s.RetentionRecords - 1 // the current artifact takes one record
	if keep < 0 {
		keep = 0
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].mod.After(candidates[j].mod) })
	for _, f := range candidates[min(keep, len(candidates)):] {
		if err := remove(f.name); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// RemoveObject deletes all artifacts of one object: its whole directory.
func (s *Storage) RemoveObject(objectDir string) error {
	return os.RemoveAll(filepath.Join(s.BasePath, filepath.FromSlash(objectDir)))
}

// Remove deletes one artifact's file.
func (s *Storage) Remove(a meta.Artifact) error {
	err := os.Remove(s.LocalPath(a))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Handler serves the storage tree over HTTP (GET, HEAD and ranges), as
// source-controller's file server does.
func (s *Storage) Handler() http.Handler {
	return http.FileServer(http.Dir(s.BasePath))
}

// HideDotPaths serves h but answers 404 for any path with a segment that
// starts with '.': work directories and artifacts being written are not
// artifacts (Flux's artifact names never start with '.').
func HideDotPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, seg := range strings.Split(r.URL.Path, "/") {
			if strings.HasPrefix(seg, ".") {
				http.NotFound(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// FileName returns the artifact file name for a revision's hash: the hex
// after the last ':' (`main@sha1:<hex>` ⇒ `<hex>.tar.gz`). Flux compatible.
func FileName(revision string) string {
	return revision[strings.LastIndex(revision, ":")+1:] + ".tar.gz"
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
