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
	"github.com/eddyops/eddy/pkg/testenv"
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

type tarEntry = testenv.TarEntry

func makeTarGz(t *testing.T, entries ...tarEntry) []byte { return testenv.TarGz(t, entries...) }

func TestExtractRefusesUnsafeEntries(t *testing.T) {
	cases := map[string][]tarEntry{
		"parent escape":  {{Name: "../evil.yaml", Type: tar.TypeReg, Body: "x"}},
		"nested escape":  {{Name: "a/../../evil.yaml", Type: tar.TypeReg, Body: "x"}},
		"absolute name":  {{Name: "/etc/evil.yaml", Type: tar.TypeReg, Body: "x"}},
		"symbolic link":  {{Name: "link", Link: "/etc/passwd", Type: tar.TypeSymlink}},
		"hard link":      {{Name: "hard", Link: "/etc/passwd", Type: tar.TypeLink}},
		"device":         {{Name: "dev", Type: tar.TypeChar}},
		"too many files": {{Name: "1", Type: tar.TypeReg}, {Name: "2", Type: tar.TypeReg}, {Name: "3", Type: tar.TypeReg}},
		"too many bytes": {{Name: "big", Type: tar.TypeReg, Body: strings.Repeat("x", 200)}},
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
