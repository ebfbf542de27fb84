package artifact_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/eddyops/eddy/pkg/artifact"
)

// linkTree is writeTree plus symbolic links (name → target as written).
func linkTree(t *testing.T, files, links map[string]string) string {
	t.Helper()
	root := writeTree(t, files)
	for name, target := range links {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// tarGz archives root with opts; it returns the bytes and the error.
func tarGz(t *testing.T, root string, opts artifact.TarOptions) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	err := artifact.WriteTarGz(&buf, root, opts)
	return buf.Bytes(), err
}

// contents maps each entry of data to its content ("/" for a directory).
func contents(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	eachEntry(t, data, func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeDir {
			out[h.Name] = "/"
			return
		}
		b, _ := io.ReadAll(r)
		out[h.Name] = string(b)
	})
	return out
}

const cm = "kind: ConfigMap\n"

func TestFollowSymlinksArchivesWhatInBoundLinksPointTo(t *testing.T) {
	files := map[string]string{"shared/cm.yaml": cm, "shared/sub/deep.yaml": "deep", "apps/a/own.yaml": "own"}
	cases := []struct {
		name  string
		links map[string]string
		want  map[string]string // entries beyond the files' own
	}{
		{"file link", map[string]string{"apps/x/cm.yaml": "../../shared/cm.yaml"},
			map[string]string{"apps/x": "/", "apps/x/cm.yaml": cm}},
		{"directory link", map[string]string{"apps/y": "../shared"},
			map[string]string{"apps/y": "/", "apps/y/cm.yaml": cm, "apps/y/sub": "/", "apps/y/sub/deep.yaml": "deep"}},
		{"chain of links", map[string]string{"apps/a/one.yaml": "two.yaml", "apps/a/two.yaml": "../../shared/cm.yaml"},
			map[string]string{"apps/a/one.yaml": cm, "apps/a/two.yaml": cm}},
		{"link through a linked directory", map[string]string{"apps/s": "../shared", "apps/a/deep.yaml": "../s/sub/deep.yaml"},
			map[string]string{"apps/s": "/", "apps/s/cm.yaml": cm, "apps/s/sub": "/", "apps/s/sub/deep.yaml": "deep", "apps/a/deep.yaml": "deep"}},
		{"cycle to an ancestor is cut", map[string]string{"shared/sub/up": ".."},
			map[string]string{"shared/sub/up": "/"}},
		{"cycle between two linked directories is cut", map[string]string{"apps/s": "../shared", "shared/back": "../apps"},
			map[string]string{"apps/s": "/", "apps/s/cm.yaml": cm, "apps/s/sub": "/", "apps/s/sub/deep.yaml": "deep", "apps/s/back": "/",
				"shared/back": "/", "shared/back/a": "/", "shared/back/a/own.yaml": "own", "shared/back/s": "/"}},
		{"cycle to the root is cut", map[string]string{"apps/root": ".."},
			map[string]string{"apps/root": "/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := linkTree(t, files, tc.links)
			data, err := tarGz(t, root, artifact.TarOptions{FollowSymlinks: true})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{".": "/", "shared": "/", "shared/cm.yaml": cm, "shared/sub": "/", "shared/sub/deep.yaml": "deep",
				"apps": "/", "apps/a": "/", "apps/a/own.yaml": "own"}
			for k, v := range tc.want {
				want[k] = v
			}
			if got := contents(t, data); !reflect.DeepEqual(got, want) {
				t.Errorf("entries\n got %v\nwant %v", got, want)
			}
			readEntries(t, data) // sanitised headers, relative names
			again, _ := tarGz(t, root, artifact.TarOptions{FollowSymlinks: true})
			if !bytes.Equal(data, again) {
				t.Error("two archives of one tree differ")
			}
		})
	}
}

func TestFollowSymlinksRefusesLinksOutOfTheTreeOrToNothing(t *testing.T) {
	files := map[string]string{"shared/cm.yaml": cm, ".git/config": "[core]\n"}
	cases := []struct {
		name     string
		links    map[string]string
		path     string
		dangling bool
	}{
		{"above the root", map[string]string{"apps/evil.yaml": "../../../outside.yaml"}, "apps/evil.yaml", false},
		{"absolute", map[string]string{"apps/abs.yaml": "/etc/hostname"}, "apps/abs.yaml", false},
		{"out and back in, as written", map[string]string{"apps/back.yaml": "../../" + "ROOT" + "/shared/cm.yaml"}, "apps/back.yaml", false},
		{"through another link", map[string]string{"a.yaml": "d/hostname", "d": "/etc"}, "a.yaml", false},
		{"into .git", map[string]string{"apps/git.yaml": "../.git/config"}, "apps/git.yaml", false},
		{"inside a linked directory", map[string]string{"apps/s": "../shared", "shared/evil": "../../x"}, "shared/evil", false},
		{"missing target", map[string]string{"apps/gone.yaml": "nothing.yaml"}, "apps/gone.yaml", true},
		{"loop of links", map[string]string{"l1": "l2", "l2": "l1"}, "l1", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := linkTree(t, files, nil)
			for name, target := range tc.links {
				if target == "../../ROOT/shared/cm.yaml" {
					target = "../../" + filepath.Base(root) + "/shared/cm.yaml"
				}
				p := filepath.Join(root, filepath.FromSlash(name))
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
					t.Fatal(err)
				}
			}
			_, err := tarGz(t, root, artifact.TarOptions{FollowSymlinks: true})
			var se *artifact.SymlinkError
			if !errors.As(err, &se) || se.Path != tc.path || se.Dangling != tc.dangling {
				t.Fatalf("error %v, want a SymlinkError for %s (dangling %v)", err, tc.path, tc.dangling)
			}
			want := "repository contains out-of-bounds symlinks. file: " + tc.path
			if tc.dangling {
				want = "repository contains dangling symlinks. file: " + tc.path
			}
			if err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		})
	}
}

// TestFollowSymlinksOffKeepsFluxBytes: without the option links are
// dropped and the bytes are those of the tree without them; with it, a
// tree without links gives the very same bytes (the same digest).
func TestFollowSymlinksOffKeepsFluxBytes(t *testing.T) {
	files := map[string]string{"shared/cm.yaml": cm, "apps/a/run.sh*": "#!/bin/sh\n", "README.md": "r"}
	plain := writeTree(t, files)
	linked := linkTree(t, files, map[string]string{"apps/x/cm.yaml": "../../shared/cm.yaml", "apps/y": "../shared", "evil": "/etc"})
	if err := os.MkdirAll(filepath.Join(plain, "apps", "x"), 0o755); err != nil { // the link's directory, a real one
		t.Fatal(err)
	}
	want, _ := archive(t, plain, nil)
	got, _ := archive(t, linked, nil)
	if !bytes.Equal(got, want) {
		t.Error("WriteArchive of a tree with links differs from the tree without them")
	}
	off, err := tarGz(t, linked, artifact.TarOptions{})
	if err != nil || !bytes.Equal(off, want) {
		t.Errorf("WriteTarGz without FollowSymlinks: err %v, same bytes %v", err, bytes.Equal(off, want))
	}
	on, err := tarGz(t, plain, artifact.TarOptions{FollowSymlinks: true})
	if err != nil || !bytes.Equal(on, want) {
		t.Errorf("WriteTarGz with FollowSymlinks of a tree without links: err %v, same bytes %v", err, bytes.Equal(on, want))
	}
}

// TestFollowSymlinksWithIgnoreAndModes: an excluded link is neither
// followed nor judged; a linked directory's contents are matched below
// the link's name; the executable bit is the target's.
func TestFollowSymlinksWithIgnoreAndModes(t *testing.T) {
	root := linkTree(t, map[string]string{"shared/cm.yaml": cm, "shared/run.sh*": "#!/bin/sh\n", "shared/skip.txt": "s"},
		map[string]string{"ignored.yaml": "/etc/hostname", "apps/y": "../shared", "apps/run.sh": "../shared/run.sh"})
	ign, err := artifact.LoadIgnore(root, ptr("/ignored.yaml\n/apps/y/skip.txt\n"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := tarGz(t, root, artifact.TarOptions{FollowSymlinks: true, Exclude: ign.Match})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	eachEntry(t, data, func(h *tar.Header, _ io.Reader) { got[h.Name] = h.Mode })
	want := map[string]int64{".": 0o750, "apps": 0o750, "apps/run.sh": 0o700, "apps/y": 0o750, "apps/y/cm.yaml": 0o600,
		"apps/y/run.sh": 0o700, "shared": 0o750, "shared/cm.yaml": 0o600, "shared/run.sh": 0o700, "shared/skip.txt": 0o600}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n got %v\nwant %v", got, want)
	}
}

// TestStorageArchiveWithKeepsThePreviousArtifactOnARefusedLink: a refused
// link writes no artifact file.
func TestStorageArchiveWithKeepsThePreviousArtifactOnARefusedLink(t *testing.T) {
	st, err := artifact.NewStorage(t.TempDir(), "localhost", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	good := linkTree(t, map[string]string{"shared/cm.yaml": cm}, map[string]string{"apps/cm.yaml": "../shared/cm.yaml"})
	a, err := st.ArchiveWith("gitrepository/ns/repo", "abc.tar.gz", "main@sha1:abc", good, artifact.TarOptions{FollowSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	bad := linkTree(t, map[string]string{"shared/cm.yaml": cm}, map[string]string{"apps/cm.yaml": "../../cm.yaml"})
	if _, err := st.ArchiveWith("gitrepository/ns/repo", "def.tar.gz", "main@sha1:def", bad, artifact.TarOptions{FollowSymlinks: true}); err == nil {
		t.Fatal("an out-of-bounds link was archived")
	}
	entries, _ := os.ReadDir(filepath.Dir(st.LocalPath(*a)))
	if len(entries) != 1 || entries[0].Name() != "abc.tar.gz" || st.Verify(*a) != nil {
		t.Errorf("storage holds %v, want the previous artifact alone, intact", entries)
	}
}
