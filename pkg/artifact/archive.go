package artifact

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// WriteArchive writes the tree at root to w as a deterministic tar.gz:
// entries in lexical order, only regular files and directories (symbolic
// links and other types are dropped), paths excluded by ignore (may be nil)
// left out (each path matched on its own, as Flux does), the .git directory
// never entered, and headers sanitised so that the bytes depend only on names,
// contents and the executable bit: names relative to root (the root itself
// is "."), uid/gid 0, no user or group names, zero times, mode 0750 for
// directories, 0700 for executable files and 0600 for other files.
// Flux compatible: fluxcd/pkg artifact storage's archive format. The gzip
// stream uses the default level and an empty header.
func WriteArchive(w io.Writer, root string, ignore *Ignore) error {
	opts := TarOptions{}
	if ignore != nil {
		opts.Exclude = ignore.Match
	}
	return WriteTarGz(w, root, opts)
}

// TarOptions choose between the two tar.gz formats Flux writes: its
// artifact storage's (the zero value) and its OCI artifacts'.
type TarOptions struct {
	// Exclude reports whether the entry rel (relative to the root, never
	// ".") stays out; an excluded directory loses its own entry only, its
	// contents are asked one by one. Nil keeps everything.
	Exclude func(rel string, isDir bool) bool
	// KeepModes writes the permission bits found on disk (setuid, setgid and
	// sticky included) instead of the sanitised 0750/0700/0600.
	KeepModes bool
	// EnterGit walks into .git directories like any other (Exclude still
	// applies); by default they are never entered.
	EnterGit bool
	// FollowSymlinks archives each symbolic link as what it points to, as
	// Argo CD renders a checkout: a file's content as a regular file under
	// the link's name, a directory as a copy of its tree under the link's
	// name (links inside followed too). The target, resolved through
	// chains of links, must stay inside the root (and out of .git unless
	// EnterGit); a link that leaves it or is absolute fails the archive
	// with a *SymlinkError (OutOfBounds), one that resolves to nothing
	// (missing target, a loop of links) with a *SymlinkError (Dangling).
	// A link back to a directory being copied (a cycle) is archived as an
	// empty directory. Entries and bytes reached through links are bounded
	// by DefaultLimits, as consumers extract them. Excluded links are
	// matched by their own name, as files are; a linked directory's
	// contents by their names below the link. Beyond Flux, whose archives
	// drop links; off, the bytes are Flux's.
	FollowSymlinks bool
}

// WriteTarGz writes the tree at root to w as a tar.gz in lexical order with
// only regular files and directories (symbolic links and other types are
// dropped, unless TarOptions.FollowSymlinks), the root itself as ".",
// uid/gid 0, no user or group names and zero times, so the bytes depend
// only on names, contents, modes (see TarOptions.KeepModes) and opts. The
// gzip stream uses the default level and an empty header. With KeepModes
// and EnterGit it is the format of fluxcd/pkg/tar.Tar, which `flux
// build|push artifact` use. A link FollowSymlinks refuses is returned as
// a *SymlinkError (what was written to w is then no archive).
func WriteTarGz(w io.Writer, root string, opts TarOptions) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	a := &archiver{tw: tw, opts: opts}
	if opts.FollowSymlinks {
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			return err
		}
		if a.root, err = filepath.Abs(real); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && !opts.EnterGit {
			return filepath.SkipDir
		}
		if opts.FollowSymlinks && d.Type()&fs.ModeSymlink != 0 {
			// The walk follows no link, so the link's directory is as
			// real as the root.
			parent := filepath.Join(a.root, filepath.Dir(rel))
			return a.link(parent, d.Name(), filepath.ToSlash(rel), a.ancestors(rel))
		}
		// Flux compatible: an excluded directory loses its own entry only; its
		// contents are matched one by one, so `/*` with `!/apps/production/`
		// keeps apps/production.
		if rel != "." && opts.Exclude != nil && opts.Exclude(rel, d.IsDir()) {
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return a.write(info, path, filepath.ToSlash(rel))
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// archiver writes the entries of one WriteTarGz.
type archiver struct {
	tw   *tar.Writer
	opts TarOptions
	// root is the real, absolute root (FollowSymlinks only).
	root string
	// linkedEntries and linkedBytes count what links added (FollowSymlinks).
	linkedEntries int
	linkedBytes   int64
}

// write archives the regular file or directory described by info, whose
// content is read from path, under the slash-separated name.
func (a *archiver) write(info fs.FileInfo, path, name string) error {
	hdr, err := tarHeader(info, name, a.opts.KeepModes)
	if err != nil {
		return err
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archiving %s: %w", hdr.Name, err)
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	return copyFile(a.tw, path, hdr.Size, hdr.Name)
}

// tarHeader is the header of a regular file or directory named name.
func tarHeader(info fs.FileInfo, name string, keepModes bool) (*tar.Header, error) {
	if keepModes {
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return nil, err
		}
		hdr.Name = name
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}, time.Time{}
		return hdr, nil
	}
	hdr := &tar.Header{Name: name}
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o750
	case info.Mode().Perm()&0o100 != 0:
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o700, info.Size()
	default:
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o600, info.Size()
	}
	return hdr, nil
}

func copyFile(w io.Writer, path string, size int64, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// The size was taken from the header; a file that grew meanwhile is cut, one
	// that shrank is an error, so the archive never lies about its entries.
	if n, err := io.Copy(w, io.LimitReader(f, size)); err != nil {
		return fmt.Errorf("archiving %s: %w", name, err)
	} else if n != size {
		return fmt.Errorf("archiving %s: file changed while being archived", name)
	}
	return nil
}
