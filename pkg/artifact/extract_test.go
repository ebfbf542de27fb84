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
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
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

func TestExtractRefusesUnsafeEntries(t *testing.T) {
	cases := map[string][]artifacttest.Entry{
		"parent escape":  {{Name: "../evil.yaml", Type: tar.TypeReg, Content: "x"}},
		"nested escape":  {{Name: "a/../../evil.yaml", Type: tar.TypeReg, Content: "x"}},
		"absolute name":  {{Name: "/etc/evil.yaml", Type: tar.TypeReg, Content: "x"}},
		"symbolic link":  {{Name: "link", Link: "/etc/passwd", Type: tar.TypeSymlink}},
		"hard link":      {{Name: "hard", Link: "/etc/passwd", Type: tar.TypeLink}},
		"device":         {{Name: "dev", Type: tar.TypeChar}},
		"too many files": {{Name: "1", Type: tar.TypeReg}, {Name: "2", Type: tar.TypeReg}, {Name: "3", Type: tar.TypeReg}},
		"too many bytes": {{Name: "big", Type: tar.TypeReg, Content: strings.Repeat("x", 200)}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			os.Mkdir(dst, 0o755)
			err := artifact.Extract(bytes.NewReader(artifacttest.TarGz(t, entries...)), dst, artifact.Limits{MaxBytes: 100, MaxFiles: 2})
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
	data := artifacttest.TarGz(t, artifacttest.Entry{Name: "link/evil.yaml", Type: tar.TypeReg, Content: "x"})
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
	f.Add(artifacttest.TarGz(f, artifacttest.Entry{Name: "a/b.yaml", Type: tar.TypeReg, Content: "b"}, artifacttest.Entry{Name: "a", Type: tar.TypeDir}))
	f.Add(artifacttest.TarGz(f, artifacttest.Entry{Name: "../evil", Type: tar.TypeReg, Content: "x"}))
	f.Add(artifacttest.TarGz(f, artifacttest.Entry{Name: "l", Link: "/etc", Type: tar.TypeSymlink}, artifacttest.Entry{Name: "l/x", Type: tar.TypeReg}))
	f.Add(artifacttest.TarGz(f, artifacttest.Entry{Name: "./x/./../y", Type: tar.TypeReg, Content: "y"}))
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

// TestExtractSkipSymlinks: with SkipSymlinks a link inside the tree is
// skipped (Flux's OCIRepository extraction), one pointing out is refused.
func TestExtractSkipSymlinks(t *testing.T) {
	lim := artifact.DefaultLimits
	lim.SkipSymlinks = true
	in := artifacttest.TarGz(t, artifacttest.Entry{Name: "a/b.yaml", Content: "b"},
		artifacttest.Entry{Name: "a/c.yaml", Link: "b.yaml", Type: tar.TypeSymlink},
		artifacttest.Entry{Name: "d.yaml", Link: "a/../a/b.yaml", Type: tar.TypeSymlink})
	dst := t.TempDir()
	if err := artifact.Extract(bytes.NewReader(in), dst, lim); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a/c.yaml", "d.yaml"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); !os.IsNotExist(err) {
			t.Errorf("link %s was written (%v)", name, err)
		}
	}
	for link, entry := range map[string]string{"../x": "up", "/etc/passwd": "abs", "../../etc": "a/deep"} {
		in := artifacttest.TarGz(t, artifacttest.Entry{Name: entry, Link: link, Type: tar.TypeSymlink})
		err := artifact.Extract(bytes.NewReader(in), t.TempDir(), lim)
		if !errors.Is(err, artifact.ErrUnsafeArchive) || !strings.Contains(err.Error(), "links outside") {
			t.Errorf("link %s → %s: %v, want it refused", entry, link, err)
		}
	}
}

// TestExtractSkipsPAXGlobalHeader: `git archive` starts its tar with a PAX
// global header (the commit id as a comment); it is metadata, not a file,
// so a layer made from it is extracted (Flux's untar accepts it too).
func TestExtractSkipsPAXGlobalHeader(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
		PAXRecords: map[string]string{"comment": "3f1b2c4d5e6f708192a3b4c5d6e7f80912a3b4c5"}}))
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "app/a.yaml", Mode: 0o644, Size: 1}))
	_, err := tw.Write([]byte("a"))
	must(err)
	must(tw.Close())
	must(gz.Close())
	dst := t.TempDir()
	if err := artifact.Extract(bytes.NewReader(buf.Bytes()), dst, artifact.Limits{MaxBytes: 100, MaxFiles: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "app", "a.yaml")); err != nil || string(got) != "a" {
		t.Errorf("app/a.yaml = %q (%v)", got, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "pax_global_header")); err == nil {
		t.Error("the global header was written as a file")
	}
}

// TestExtractLongNames: a hostile name (PAX allows ~1 MiB) is neither
// quoted whole in the error, whose text ends up in a status condition
// (32 KiB at most), nor extracted when longer than a path can be.
func TestExtractLongNames(t *testing.T) {
	for name, entry := range map[string]artifacttest.Entry{
		"escape": {Name: strings.Repeat("../", 20000) + "evil.yaml", Content: "x"},
		"deep":   {Name: strings.Repeat("d/", 3000) + "f.yaml", Content: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			err := artifact.Extract(bytes.NewReader(artifacttest.TarGz(t, entry)), t.TempDir(), artifact.DefaultLimits)
			if !errors.Is(err, artifact.ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrUnsafeArchive", err)
			}
			if n := len(err.Error()); n > 1024 {
				t.Errorf("the error has %d bytes: %.200s…", n, err)
			}
		})
	}
}
