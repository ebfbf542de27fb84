// Package storage keeps the scanned tags of each ImageRepository on disk, in
// the layout of Flux v2.10's FluxStorage feature (the file-based tag store
// that replaces BadgerDB): <root>/imagerepository/<namespace>/<name>/tags.txt,
// one tag per line in scan order, gzipped as tags.txt.gz when the text
// reaches the compression threshold. The revision of a tag list is
// "sha256:<hex>" of that text (before compression), as Flux's.
//
// On disk so that a restarted controller does not rescan every repository
// at once (Flux rescans a repository whose store is empty) and memory holds
// only the lists in use: the last list read of each repository is kept in
// memory with its revision, so the policies reading one repository parse
// its file once per scan.
package storage

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const (
	plainFile = "tags.txt"
	gzipFile  = "tags.txt.gz"
	kindDir   = "imagerepository"
)

// Store is the tag store under one root directory; safe for concurrent use.
type Store struct {
	root      string
	threshold int
	mu        sync.Mutex
	cache     map[string]entry
}

type entry struct {
	revision string
	tags     []string
}

// New returns the store under root (created, mode 0700), gzipping tag
// files of at least thresholdBytes (Flux's --storage-compression-threshold,
// in KiB there).
func New(root string, thresholdBytes int) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(root, kindDir), 0o700); err != nil {
		return nil, fmt.Errorf("creating the tag store: %w", err)
	}
	return &Store{root: root, threshold: thresholdBytes, cache: map[string]entry{}}, nil
}

func (s *Store) dir(namespace, name string) string {
	return filepath.Join(s.root, kindDir, namespace, name)
}

// Revision returns the revision of a tag list: "sha256:" and the hex
// SHA-256 of the tags, each followed by a newline.
func Revision(tags []string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(lines(tags)))
}

func lines(tags []string) []byte {
	var b bytes.Buffer
	for _, t := range tags {
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Set stores the tags of namespace/name (replacing the last list,
// atomically) and returns their revision.
func (s *Store) Set(namespace, name string, tags []string) (string, error) {
	if namespace == "" || name == "" {
		return "", errors.New("tag store: namespace and name are required")
	}
	text := lines(tags)
	rev := fmt.Sprintf("sha256:%x", sha256.Sum256(text))
	file, payload, stale := plainFile, text, gzipFile
	if len(text) >= s.threshold {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(text)
		if err := zw.Close(); err != nil {
			return "", err
		}
		file, payload, stale = gzipFile, b.Bytes(), plainFile
	}
	dir := s.dir(namespace, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("tag store: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, file), payload); err != nil {
		return "", fmt.Errorf("tag store: writing the tags of %s/%s: %w", namespace, name, errors.Unwrap(err))
	}
	_ = os.Remove(filepath.Join(dir, stale))
	s.mu.Lock()
	s.cache[namespace+"/"+name] = entry{revision: rev, tags: append([]string(nil), tags...)}
	s.mu.Unlock()
	return rev, nil
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tags-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Tags returns the stored tags of namespace/name and their revision; no
// stored list is (nil, "", nil).
func (s *Store) Tags(namespace, name string) ([]string, string, error) {
	key := namespace + "/" + name
	s.mu.Lock()
	e, ok := s.cache[key]
	s.mu.Unlock()
	if ok {
		return e.tags, e.revision, nil
	}
	text, err := s.read(namespace, name)
	if err != nil || text == nil {
		return nil, "", err
	}
	tags := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	if len(text) == 0 {
		tags = []string{}
	}
	rev := fmt.Sprintf("sha256:%x", sha256.Sum256(text))
	s.mu.Lock()
	s.cache[key] = entry{revision: rev, tags: tags}
	s.mu.Unlock()
	return tags, rev, nil
}

func (s *Store) read(namespace, name string) ([]byte, error) {
	dir := s.dir(namespace, name)
	b, err := os.ReadFile(filepath.Join(dir, plainFile))
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tag store: reading the tags of %s/%s: %w", namespace, name, errors.Unwrap(err))
	}
	f, err := os.Open(filepath.Join(dir, gzipFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tag store: reading the tags of %s/%s: %w", namespace, name, errors.Unwrap(err))
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("tag store: the tags of %s/%s are not gzip: %w", namespace, name, err)
	}
	return io.ReadAll(zr)
}

// Delete removes the tags of namespace/name.
func (s *Store) Delete(namespace, name string) error {
	s.mu.Lock()
	delete(s.cache, namespace+"/"+name)
	s.mu.Unlock()
	if err := os.RemoveAll(s.dir(namespace, name)); err != nil {
		return fmt.Errorf("tag store: deleting the tags of %s/%s: %w", namespace, name, errors.Unwrap(err))
	}
	return nil
}
