package artifact

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what Extract writes.
type Limits struct {
	// MaxBytes is the most file content written, in bytes.
	MaxBytes int64
	// MaxFiles is the most entries (files and directories) written.
	MaxFiles int
}

// DefaultLimits: 1 GiB and 100,000 entries.
var DefaultLimits = Limits{MaxBytes: 1 << 30, MaxFiles: 100_000}

// ErrUnsafeArchive is wrapped by Extract's errors about entries it refuses.
var ErrUnsafeArchive = errors.New("unsafe archive")

// Extract unpacks the tar.gz stream r into dir, which must exist. It refuses
// (an error wrapping ErrUnsafeArchive that names the entry) absolute names,
// names that leave dir, links and every type other than regular files and
// directories, and stops with an error past lim. Files get mode 0644 (0755
// when executable), directories 0755.
func Extract(r io.Reader, dir string, lim Limits) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading artifact: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var written int64
	entries := 0
	made := map[string]bool{dir: true} // directories known to exist: one MkdirAll each, not one per file
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading artifact: %w", err)
		}
		rel, err := safeRel(h.Name)
		if err != nil {
			return err
		}
		if entries++; entries > lim.MaxFiles {
			return fmt.Errorf("%w: more than %d entries", ErrUnsafeArchive, lim.MaxFiles)
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if !made[target] {
				if err := os.MkdirAll(target, 0o755); err != nil {
					return err
				}
				made[target] = true
			}
		case tar.TypeReg:
			if h.Size < 0 || h.Size > lim.MaxBytes-written {
				return fmt.Errorf("%w: content larger than %d bytes", ErrUnsafeArchive, lim.MaxBytes)
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o100 != 0 {
				mode = 0o755
			}
			if parent := filepath.Dir(target); !made[parent] {
				if err := os.MkdirAll(parent, 0o755); err != nil {
					return err
				}
				made[parent] = true
			}
			if err := writeFile(target, tr, h.Size, mode); err != nil {
				return err
			}
			written += h.Size
		default:
			return fmt.Errorf("%w: entry %q is a link or special file", ErrUnsafeArchive, h.Name)
		}
	}
}

// safeRel checks a tar entry name and returns it cleaned, relative.
func safeRel(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: entry %q has an absolute or invalid name", ErrUnsafeArchive, name)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: entry %q leaves the extraction directory", ErrUnsafeArchive, name)
	}
	return clean, nil
}

func writeFile(target string, r io.Reader, size int64, mode os.FileMode) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
