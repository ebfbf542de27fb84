package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"sort"
	"testing"
)

// TarEntry is one entry of an archive written by TarGz.
type TarEntry struct {
	// Name is the entry's path, written as given (hostile names included).
	Name string
	// Type is the tar type flag; 0 is a regular file.
	Type byte
	// Link is the target of a symbolic or hard link.
	Link string
	// Body is a regular file's content.
	Body string
}

// TarGz returns a gzipped tar of entries in order, as an artifact is
// served; modes are 0644. It fails t on error.
func TarGz(t testing.TB, entries ...TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Type, Linkname: e.Link, Mode: 0o644}
		if e.Type == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Body[:h.Size])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TarGzFiles is TarGz of regular files, name → content, in name order.
func TarGzFiles(t testing.TB, files map[string]string) []byte {
	t.Helper()
	entries := make([]TarEntry, 0, len(files))
	for name, body := range files {
		entries = append(entries, TarEntry{Name: name, Body: body})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return TarGz(t, entries...)
}
