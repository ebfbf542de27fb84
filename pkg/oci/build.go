package oci

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/eddyops/eddy/pkg/artifact"
)

// Build writes the artifact content of path, a directory or a single file,
// to the tar.gz file out (mode 0640, replaced whole: written beside it and
// renamed). The format is fluxcd/pkg/oci's Build, byte for byte, so that
// `flux diff artifact` and `eddy diff artifact` agree on any artifact:
//   - the tree's entries in lexical order, the root as ".", regular files
//     and directories only (symbolic links are left out), each with its
//     permission bits as on disk, uid/gid 0, no names, zero times;
//   - a single file is archived as the only entry of a directory of mode 0700;
//   - ignorePaths (.gitignore syntax, relative to path) exclude entries; an
//     excluded directory loses its own entry, its contents are matched one
//     by one. The CLI's default is DefaultIgnorePaths. .sourceignore files
//     are not read here, as in Flux: they travel in the artifact, and the
//     consumer (OCIRepository) applies them.
//
// Errors name path as given, never a temporary file.
func Build(out, path string, ignorePaths []string) (err error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(absOut), "."+filepath.Base(absOut)+".*")
	if err != nil {
		return fmt.Errorf("creating artifact %s: %w", out, pathless(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = writeContent(tmp, path, ignorePaths, tmp.Name()); err != nil {
		return err
	}
	if err = tmp.Chmod(0o640); err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), absOut)
	}
	if err != nil {
		return fmt.Errorf("writing artifact %s: %w", out, pathless(err))
	}
	return nil
}

// DefaultIgnorePaths are the --ignore-paths default of `flux build|push|diff
// artifact`: the VCS files and the binary extensions of
// fluxcd/pkg/sourceignore (ExcludeVCS and ExcludeExt).
var DefaultIgnorePaths = append(append([]string{}, artifact.VCSPatterns...),
	"*.jpg", "*.jpeg", "*.gif", "*.png", "*.wmv", "*.flv", "*.tar.gz", "*.zip")

// writeContent writes the tar.gz of path to w; skip (an absolute path, may
// be empty) is left out, so that an output file inside the tree does not
// archive itself.
func writeContent(w io.Writer, path string, ignorePaths []string, skip string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("source path does not exist: %s", path)
	} else if err != nil {
		return fmt.Errorf("invalid source path %s: %w", path, err)
	}
	root := abs
	if !info.IsDir() {
		// Flux compatible: the file is staged in a new directory (mode 0700)
		// and that directory archived.
		stage, err := os.MkdirTemp("", "eddy-oci-build-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(stage)
		if err := copyFile(filepath.Join(stage, info.Name()), abs, info.Mode().Perm()); err != nil {
			return fmt.Errorf("reading %s: %w", path, pathless(err))
		}
		root = stage
	}
	ignore := artifact.NewIgnore(ignorePaths)
	err = artifact.WriteTarGz(w, root, artifact.TarOptions{
		KeepModes: true,
		EnterGit:  true,
		Exclude: func(rel string, isDir bool) bool {
			return ignore.Match(rel, isDir) || (skip != "" && filepath.Join(root, rel) == skip)
		},
	})
	if err != nil {
		return fmt.Errorf("archiving %s: %w", path, pathless(err))
	}
	return nil
}

// pathless drops the paths of an *fs.PathError or *os.LinkError (which may
// be temporary files') and keeps the operation and cause.
func pathless(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	case errors.As(err, &le):
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

func copyFile(dst, src string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
