package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ErrStorageFull means an artifact was not kept because the storage would
// hold more than Storage.MaxBytes with it.
var ErrStorageFull = errors.New("artifact storage is full")

// Usage returns the bytes of the regular files of the storage tree: the
// artifacts and the temporary files of writes in progress, not what
// directories whose name starts with '.' hold (source-controller's work
// directory). Errors are the file system's.
func (s *Storage) Usage() (int64, error) {
	var n int64
	err := filepath.WalkDir(s.BasePath, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if d.IsDir() && p != s.BasePath && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n, err
}

// checkCapacity fails with ErrStorageFull when MaxBytes is set and the
// storage, holding the new artifact of size bytes already (as its
// temporary file), is above it.
func (s *Storage) checkCapacity(size int64) error {
	if s.MaxBytes <= 0 {
		return nil
	}
	used, err := s.Usage()
	if err != nil {
		return err
	}
	if used > s.MaxBytes {
		return fmt.Errorf("%w: the artifact of %d bytes would bring it to %d bytes, above its bound of %d bytes (--storage-max-bytes)",
			ErrStorageFull, size, used, s.MaxBytes)
	}
	return nil
}
