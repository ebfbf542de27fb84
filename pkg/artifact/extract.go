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
	// SkipSymlinks skips a symbolic link whose target stays inside the
	// root instead of refusing the archive; a link pointing out (absolute
	// or through `..`) is still refused. Flux's OCIRepository extraction
	// skips symbolic links (fluxcd/pkg/tar WithSkipSymlinks).
	SkipSymlinks bool
}

// DefaultLimits: 1 GiB and 100,000 entries.
var DefaultLimits = Limits{MaxBytes: 1 << 30, MaxFiles: 100_000}

// ErrUnsafeArchive is wrapped by Extract's errors about entries it refuses.
var ErrUnsafeArchive = errors.New("unsafe archive")

// Entry is one member of an artifact archive, as ReadArchive hands it over.
type Entry struct {
	// Name is the cleaned, relative, slash-separated path.
	Name string
	// Dir is true for a directory; otherwise Content holds Size bytes.
	Dir     bool
	Mode    os.FileMode // 0644 or 0755 for files, 0755 for directories
	Size    int64
	Content io.Reader
}

// ReadArchive reads the tar.gz stream r and calls visit for each entry in
// order. It refuses (an error wrapping ErrUnsafeArchive that names the entry)
// absolute names, names that leave the root, links (but see
// Limits.SkipSymlinks) and every type other than regular files and
// directories (a PAX global header is skipped), and stops with an error
// past lim. visit
// must consume Content before returning; its error stops the read.
func ReadArchive(r io.Reader, lim Limits, visit func(Entry) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("reading artifact: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	var written int64
	entries := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading artifact: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // PAX metadata (git archive writes one), not a file
		}
		rel, err := safeRel(h.Name)
		if err != nil {
			return err
		}
		if entries++; entries > lim.MaxFiles {
			return fmt.Errorf("%w: more than %d entries", ErrUnsafeArchive, lim.MaxFiles)
		}
		var e Entry
		switch h.Typeflag {
		case tar.TypeDir:
			e = Entry{Name: rel, Dir: true, Mode: 0o755}
		case tar.TypeReg:
			if h.Size < 0 || h.Size > lim.MaxBytes-written {
				return fmt.Errorf("%w: content larger than %d bytes", ErrUnsafeArchive, lim.MaxBytes)
			}
			e = Entry{Name: rel, Mode: 0o644, Size: h.Size, Content: io.LimitReader(tr, h.Size)}
			if h.Mode&0o100 != 0 {
				e.Mode = 0o755
			}
			written += h.Size
		case tar.TypeSymlink:
			if !lim.SkipSymlinks {
				return fmt.Errorf("%w: entry %s is a link or special file", ErrUnsafeArchive, quoteName(h.Name))
			}
			target := path.Clean(path.Join(path.Dir(rel), h.Linkname))
			if h.Linkname == "" || path.IsAbs(h.Linkname) || filepath.IsAbs(h.Linkname) || target == ".." || strings.HasPrefix(target, "../") {
				return fmt.Errorf("%w: entry %s links outside the extraction directory", ErrUnsafeArchive, quoteName(h.Name))
			}
			continue
		default:
			return fmt.Errorf("%w: entry %s is a link or special file", ErrUnsafeArchive, quoteName(h.Name))
		}
		if err := visit(e); err != nil {
			return err
		}
	}
}

// Extract unpacks the tar.gz stream r into dir, which must exist, with the
// checks of ReadArchive. Files get mode 0644 (0755 when executable),
// directories 0755. Every write goes through an os.Root opened on dir, so
// even a name that passed the checks cannot reach outside it (through a
// symbolic link already in dir, say): defence in depth.
func Extract(r io.Reader, dir string, lim Limits) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	made := map[string]bool{".": true} // directories known to exist: one MkdirAll each, not one per file
	return ReadArchive(r, lim, func(e Entry) error {
		target := filepath.FromSlash(e.Name)
		if e.Dir {
			if !made[target] {
				if err := root.MkdirAll(target, e.Mode); err != nil {
					return err
				}
				made[target] = true
			}
			return nil
		}
		if parent := filepath.Dir(target); !made[parent] {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			made[parent] = true
		}
		return writeFile(root, target, e.Content, e.Size, e.Mode)
	})
}

// maxNameBytes bounds an entry's name: with the path of the directory it
// is extracted in, it must stay under Linux's PATH_MAX (4096 bytes), or
// the extracted tree cannot be walked to be archived.
const maxNameBytes = 3072

// quoteName quotes an entry name for an error, cut after 128 bytes: a
// hostile name may be ~1 MiB (PAX), and errors end up in status conditions.
func quoteName(name string) string {
	if len(name) <= 128 {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q…", name[:128])
}

// safeRel checks a tar entry name and returns it cleaned, relative.
func safeRel(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%w: entry %s has an absolute or invalid name", ErrUnsafeArchive, quoteName(name))
	}
	if len(name) > maxNameBytes {
		return "", fmt.Errorf("%w: entry %s has a name longer than %d bytes", ErrUnsafeArchive, quoteName(name), maxNameBytes)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: entry %s leaves the extraction directory", ErrUnsafeArchive, quoteName(name))
	}
	return clean, nil
}

func writeFile(root *os.Root, target string, r io.Reader, size int64, mode os.FileMode) error {
	f, err := root.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
