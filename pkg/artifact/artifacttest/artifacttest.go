// Package artifacttest writes tar.gz artifacts for tests, hostile ones
// included (names leaving the root, links, special files), which no
// archive writer of the project would make.
package artifacttest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"sort"
	"testing"
)

// Entry is one member of a test archive.
type Entry struct {
	Name, Link string
	// Type is a tar type flag; 0 is tar.TypeReg.
	Type    byte
	Content string
}

// TarGz returns a tar.gz stream of entries in order, each with mode 0644;
// only regular files carry content. It fails t on a write error.
func TarGz(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if e.Type == 0 {
			e.Type = tar.TypeReg
		}
		h := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: e.Type, Mode: 0o644}
		if e.Type == tar.TypeReg {
			h.Size = int64(len(e.Content))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Content[:h.Size])); err != nil {
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

// Files returns a tar.gz of regular files (name → content), in name order.
func Files(t testing.TB, files map[string]string) []byte {
	t.Helper()
	entries := make([]Entry, 0, len(files))
	for name, content := range files {
		entries = append(entries, Entry{Name: name, Content: content})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return TarGz(t, entries...)
}
