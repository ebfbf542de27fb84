package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// maxExpansion bounds the decompressed size of an archive relative to
// MaxChartSize, against compression bombs.
const maxExpansion = 10

// LoadArchive loads a chart archive (.tgz) held in memory. It refuses an
// archive larger than lim.MaxChartSize, a file larger than lim.MaxFileSize,
// more than 10×MaxChartSize decompressed, absolute names, names that leave
// the chart's directory, links and other special entries. Errors name the
// offending entry as written in the archive, never a local path.
func LoadArchive(data []byte, lim Limits) (*helmchart.Chart, error) {
	lim = lim.orDefault()
	if int64(len(data)) > lim.MaxChartSize {
		return nil, fmt.Errorf("chart archive of %d bytes exceeds the maximum chart size of %d bytes", len(data), lim.MaxChartSize)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("chart archive is not gzip compressed: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	remaining := lim.MaxChartSize * maxExpansion
	var files []*loader.BufferedFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading chart archive: %w", err)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader, tar.TypeXHeader:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("chart archive entry %q is not a regular file or directory", h.Name)
		}
		name := strings.ReplaceAll(h.Name, `\`, "/")
		if path.IsAbs(name) || filepath.VolumeName(name) != "" {
			return nil, fmt.Errorf("chart archive entry %q has an absolute path", h.Name)
		}
		// The first element is the chart's directory, as in `helm package`.
		_, rel, ok := strings.Cut(path.Clean(name), "/")
		if !ok || !filepath.IsLocal(rel) || strings.Contains(name, "../") {
			return nil, fmt.Errorf("chart archive entry %q leaves the chart directory", h.Name)
		}
		if h.Size > lim.MaxFileSize {
			return nil, fmt.Errorf("chart file %q of %d bytes exceeds the maximum file size of %d bytes", rel, h.Size, lim.MaxFileSize)
		}
		if h.Size > remaining {
			return nil, fmt.Errorf("decompressed chart exceeds the maximum of %d bytes", lim.MaxChartSize*maxExpansion)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, fmt.Errorf("reading chart archive: %w", err)
		}
		remaining -= int64(len(b))
		files = append(files, &loader.BufferedFile{Name: rel, Data: bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF"))})
	}
	if len(files) == 0 {
		return nil, errors.New("no files in chart archive")
	}
	return loader.LoadFiles(files)
}

// LoadDir loads the chart directory root/rel (rel slash- or OS-separated,
// inside root). It refuses a rel that leaves root, a link or special file
// in the chart, a file over lim.MaxFileSize and files totalling over
// lim.MaxChartSize. Errors name paths relative to root.
func LoadDir(root, rel string, lim Limits) (*helmchart.Chart, error) {
	lim = lim.orDefault()
	dir, err := within(root, rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("no chart directory at path '%s'", rel)
	}
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("chart file '%s' is not a regular file", filepath.ToSlash(r))
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > lim.MaxFileSize {
			return fmt.Errorf("chart file '%s' of %d bytes exceeds the maximum file size of %d bytes", filepath.ToSlash(r), info.Size(), lim.MaxFileSize)
		}
		if total += info.Size(); total > lim.MaxChartSize {
			return fmt.Errorf("chart at path '%s' exceeds the maximum chart size of %d bytes", rel, lim.MaxChartSize)
		}
		return nil
	})
	if err != nil {
		return nil, scrub(err, root)
	}
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, scrub(err, root)
	}
	return c, nil
}

// loadAt loads the chart at root/rel: a directory or a packaged archive.
func loadAt(root, rel string, lim Limits) (*helmchart.Chart, error) {
	p, err := within(root, rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("no chart found at path '%s'", rel)
	}
	if fi.IsDir() {
		return LoadDir(root, rel, lim)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("chart at path '%s' is not a regular file or directory", rel)
	}
	if fi.Size() > lim.orDefault().MaxChartSize {
		return nil, fmt.Errorf("chart archive of %d bytes exceeds the maximum chart size of %d bytes", fi.Size(), lim.orDefault().MaxChartSize)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, scrub(err, root)
	}
	return LoadArchive(data, lim)
}

// within joins rel to root, refusing a rel that leaves root.
func within(root, rel string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(rel, "/")))
	if !filepath.IsLocal(clean) && clean != "." {
		return "", fmt.Errorf("path '%s' leaves the source artifact", rel)
	}
	return filepath.Join(root, clean), nil
}

// scrub removes the work directory from an error message so it stays
// stable and does not reveal local paths.
func scrub(err error, root string) error {
	msg := strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
	return errors.New(strings.ReplaceAll(msg, root, "."))
}
