package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/artifact"
)

func TestExtractRoundTrip(t *testing.T) {
	src := writeTree(t, map[string]string{"a/b.yaml": "b", "run.sh*": "#!/bin/sh", "c.yaml": "c"})
	data, _ := archive(t, src, nil)
	dst := t.TempDir()
	if err := artifact.Extract(bytes.NewReader(data), dst, artifact.DefaultLimits); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a/b.yaml": "b", "run.sh": "#!/bin/sh", "c.yaml": "c"} {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", name, got, err, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dst, "run.sh")); fi == nil || fi.Mode().Perm()&0o100 == 0 {
		t.Error("run.sh lost its exec bit")
	}
}

type tarEntry struct {
	name, link string
	typ        byte
	body       string
}

func makeTarGz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestExtractRefusesUnsafeEntries(t *testing.T) {
	cases := map[string][]tarEntry{
		"parent escape":  {{name: "../evil.yaml", typ: tar.TypeReg, body: "x"}},
		"nested escape":  {{name: "a/../../evil.yaml", typ: tar.TypeReg, body: "x"}},
		"absolute name":  {{name: "/etc/evil.yaml", typ: tar.TypeReg, body: "x"}},
		"symbolic link":  {{name: "link", link: "/etc/passwd", typ: tar.TypeSymlink}},
		"hard link":      {{name: "hard", link: "/etc/passwd", typ: tar.TypeLink}},
		"device":         {{name: "dev", typ: tar.TypeChar}},
		"too many files": {{name: "1", typ: tar.TypeReg}, {name: "2", typ: tar.TypeReg}, {name: "3", typ: tar.TypeReg}},
		"too many bytes": {{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 200)}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			os.Mkdir(dst, 0o755)
			err := artifact.Extract(bytes.NewReader(makeTarGz(t, entries...)), dst, artifact.Limits{MaxBytes: 100, MaxFiles: 2})
			if !errors.Is(err, artifact.ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrUnsafeArchive", err)
			}
			if _, err := os.Stat(filepath.Join(parent, "evil.yaml")); err == nil {
				t.Error("a file was written outside the extraction directory")
			}
		})
	}
}

func TestExtractSizeLimitCannotOverflow(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "a", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("x"))
	tw.WriteHeader(&tar.Header{Name: "b", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1<<63 - 1, Format: tar.FormatPAX})
	tw.Flush()
	gz.Close()
	err := artifact.Extract(bytes.NewReader(buf.Bytes()), t.TempDir(), artifact.Limits{MaxBytes: 100, MaxFiles: 10})
	if !errors.Is(err, artifact.ErrUnsafeArchive) {
		t.Errorf("got %v, want the size limit to refuse the entry", err)
	}
}

func TestExtractKeepsBackslashNames(t *testing.T) {
	src := writeTree(t, map[string]string{`a\b.yaml`: "x"})
	data, _ := archive(t, src, nil)
	dst := t.TempDir()
	if err := artifact.Extract(bytes.NewReader(data), dst, artifact.DefaultLimits); err != nil {
		t.Fatalf("a name with a backslash, legal in Git on Linux, was refused: %v", err)
	}
}

// A symbolic link already in the extraction directory (left by an earlier
// step, say) cannot lead a checked name outside it: os.Root refuses.
func TestExtractStaysInsideThroughALink(t *testing.T) {
	parent := t.TempDir()
	dst, outside := filepath.Join(parent, "dst"), filepath.Join(parent, "outside")
	os.Mkdir(dst, 0o755)
	os.Mkdir(outside, 0o755)
	if err := os.Symlink(outside, filepath.Join(dst, "link")); err != nil {
		t.Fatal(err)
	}
	data := makeTarGz(t, tarEntry{name: "link/evil.yaml", typ: tar.TypeReg, body: "x"})
	if err := artifact.Extract(bytes.NewReader(data), dst, artifact.DefaultLimits); err == nil {
		t.Error("extracting through a link out of the directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.yaml")); err == nil {
		t.Error("a file was written outside the extraction directory")
	}
}

// Artifacts are fetched from a URL a Kustomization's source names; the
// reader must refuse or extract any stream without panicking, within its
// limits and inside the directory.
func FuzzExtract(f *testing.F) {
	f.Add(makeTarGz(f, tarEntry{name: "a/b.yaml", typ: tar.TypeReg, body: "b"}, tarEntry{name: "a", typ: tar.TypeDir}))
	f.Add(makeTarGz(f, tarEntry{name: "../evil", typ: tar.TypeReg, body: "x"}))
	f.Add(makeTarGz(f, tarEntry{name: "l", link: "/etc", typ: tar.TypeSymlink}, tarEntry{name: "l/x", typ: tar.TypeReg}))
	f.Add(makeTarGz(f, tarEntry{name: "./x/./../y", typ: tar.TypeReg, body: "y"}))
	f.Add([]byte{})
	lim := artifact.Limits{MaxBytes: 1 << 16, MaxFiles: 64}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = artifact.Extract(bytes.NewReader(data), dst, lim)
		if entries, _ := os.ReadDir(parent); len(entries) != 1 {
			t.Fatalf("%d entries beside the extraction directory", len(entries)-1)
		}
		var size int64
		filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			if err != nil || p == dst {
				return err
			}
			if !d.Type().IsRegular() && !d.IsDir() {
				t.Errorf("%s is neither a file nor a directory", p)
			}
			if info, err := d.Info(); err == nil && d.Type().IsRegular() {
				size += info.Size()
			}
			return nil
		})
		// Directories a file's path implies are made without an entry, so
		// only the content is bounded exactly.
		if size > lim.MaxBytes {
			t.Errorf("%d bytes written, limit %d", size, lim.MaxBytes)
		}
	})
}
