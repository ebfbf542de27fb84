package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
)

// writeTree creates files (name → content; a trailing "*" on the name makes
// the file executable) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type entry struct {
	name string
	mode int64
	typ  byte
}

func archive(t *testing.T, root string, spec *string) ([]byte, []entry) {
	t.Helper()
	ign, err := artifact.LoadIgnore(root, spec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifact.WriteArchive(&buf, root, ign); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), readEntries(t, buf.Bytes())
}

// eachEntry calls fn with each header of the tar.gz data and its content.
func eachEntry(t *testing.T, data []byte, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(h, tr)
	}
}

func readEntries(t *testing.T, data []byte) []entry {
	t.Helper()
	var es []entry
	eachEntry(t, data, func(h *tar.Header, _ io.Reader) {
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() > 0 {
			t.Errorf("%s: header not sanitised: uid %d gid %d uname %q gname %q mtime %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		if strings.HasPrefix(h.Name, "/") || strings.Contains(h.Name, "..") {
			t.Errorf("entry name %q is not relative", h.Name)
		}
		es = append(es, entry{h.Name, h.Mode, h.Typeflag})
	})
	return es
}

func fileNames(es []entry) []string {
	var names []string
	for _, e := range es {
		if e.typ == tar.TypeReg {
			names = append(names, e.name)
		}
	}
	sort.Strings(names)
	return names
}

func TestArchiveIsDeterministicAndSanitised(t *testing.T) {
	files := map[string]string{"b.yaml": "b", "a/x.yaml": "x", "a/run.sh*": "#!/bin/sh", "README.md": "r"}
	root := writeTree(t, files)
	if err := os.Symlink("b.yaml", filepath.Join(root, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	first, es := archive(t, root, nil)
	want := []entry{
		{".", 0o750, tar.TypeDir},
		{"README.md", 0o600, tar.TypeReg},
		{"a", 0o750, tar.TypeDir},
		{"a/run.sh", 0o700, tar.TypeReg},
		{"a/x.yaml", 0o600, tar.TypeReg},
		{"b.yaml", 0o600, tar.TypeReg},
	}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("entries\n got %v\nwant %v (lexical order, no symlink, sanitised modes)", es, want)
	}

	// Same names, contents and exec bits elsewhere, other times and read bits: same bytes.
	other := writeTree(t, files)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	_ = filepath.Walk(other, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, old, old) })
	if err := os.Chmod(filepath.Join(other, "b.yaml"), 0o400); err != nil {
		t.Fatal(err)
	}
	second, _ := archive(t, other, nil)
	if !bytes.Equal(first, second) {
		t.Error("archives of equal trees differ")
	}
	// The exec bit is part of the content.
	if err := os.Chmod(filepath.Join(other, "b.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	if third, _ := archive(t, other, nil); bytes.Equal(first, third) {
		t.Error("archive did not change with a file's exec bit")
	}
}

func TestIgnoreRules(t *testing.T) {
	base := map[string]string{
		"deploy/app.yaml": "a", "deploy/logo.png": "p", ".github/workflows/ci.yaml": "c",
		".gitignore": "g", "docs/guide.md": "d", "docs/img/pic.jpg": "j", "secrets/key.yaml": "k",
	}
	cases := []struct {
		name  string
		extra map[string]string
		spec  *string
		want  []string
	}{
		{
			name: "defaults without user patterns",
			want: []string{"deploy/app.yaml", "docs/guide.md", "secrets/key.yaml"},
		},
		{
			name:  "root .sourceignore replaces the defaults",
			extra: map[string]string{".sourceignore": "secrets/\n# comment\n\n"},
			want: []string{".github/workflows/ci.yaml", ".sourceignore", "deploy/app.yaml", "deploy/logo.png",
				"docs/guide.md", "docs/img/pic.jpg"},
		},
		{
			name:  ".sourceignore in a subdirectory is scoped to it",
			extra: map[string]string{"docs/.sourceignore": "*.md\n", "guide.md": "top"},
			want: []string{".github/workflows/ci.yaml", "deploy/app.yaml", "deploy/logo.png", "docs/.sourceignore",
				"docs/img/pic.jpg", "guide.md", "secrets/key.yaml"},
		},
		{
			name:  "a line longer than 64 KiB drops no pattern after it",
			extra: map[string]string{".sourceignore": strings.Repeat("x", 70_000) + "\nsecrets/\n"},
			want: []string{".github/workflows/ci.yaml", ".sourceignore", "deploy/app.yaml", "deploy/logo.png",
				"docs/guide.md", "docs/img/pic.jpg"},
		},
		{
			name: "spec.ignore replaces the defaults",
			spec: ptr("/*\n!/deploy/\n"),
			want: []string{"deploy/app.yaml", "deploy/logo.png"},
		},
		{
			name:  "spec.ignore takes precedence over .sourceignore",
			extra: map[string]string{".sourceignore": "deploy/\n"},
			spec:  ptr("!deploy/\n"),
			want: []string{".github/workflows/ci.yaml", ".sourceignore", "deploy/app.yaml", "deploy/logo.png",
				"docs/guide.md", "docs/img/pic.jpg", "secrets/key.yaml"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			for k, v := range tc.extra {
				files[k] = v
			}
			_, es := archive(t, writeTree(t, files), tc.spec)
			if got := fileNames(es); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("files\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// Ignore patterns come from the source's own files and from spec.ignore,
// both written by whoever controls the repository or the object: loading
// and matching any of them must not panic, and a pattern on a line of its
// own counts whatever lines come before it.
func FuzzLoadIgnore(f *testing.F) {
	f.Add("secrets/\n# comment\n", "/*\n!/deploy/\n", "deploy/app.yaml")
	f.Add("*.md\r\n\\#x\n", "!deploy/\n", "docs/guide.md")
	f.Add("[a-\n**/x/**\n", "", ".git/config")
	f.Fuzz(func(t *testing.T, sourceignore, spec, path string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, artifact.IgnoreFile), []byte(sourceignore+"\nfuzz-marker.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ig, err := artifact.LoadIgnore(dir, &spec)
		if err != nil {
			t.Fatal(err)
		}
		ig.Match(path, false)
		ig.Match(path, true)
		if !strings.Contains(spec, "!") && !ig.Match("fuzz-marker.yaml", false) {
			t.Errorf("the last line of .sourceignore was dropped after %q", sourceignore)
		}
	})
}

func ptr(s string) *string { return &s }

// gitOracle lists the files of tree that git itself does not ignore, with
// .sourceignore as the per-directory ignore file and the VCS (and, when the
// tree has no .sourceignore, the default) patterns as excludes: an
// independent implementation of the same gitignore rules.
func gitOracle(t *testing.T, tree string) []string {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(tree)); err != nil {
		t.Fatal(err)
	}
	hasUserPatterns := false
	_ = filepath.Walk(work, func(p string, info os.FileInfo, _ error) error {
		if info != nil && info.Name() == artifact.IgnoreFile {
			hasUserPatterns = true
		}
		return nil
	})
	patterns := artifact.VCSPatterns
	if !hasUserPatterns {
		patterns = append(append([]string{}, patterns...), artifact.DefaultPatterns...)
	}
	excludes := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excludes, []byte(strings.Join(patterns, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	run("init", "-q")
	out := run("ls-files", "--others", "--exclude-per-directory="+artifact.IgnoreFile, "--exclude-from="+excludes)
	files := strings.Fields(out)
	sort.Strings(files)
	return files
}

// TestArchiveTestdataRepos archives each real repository of shared/testdata
// and checks its file list against git's own ignore matching, and the
// contents of two repositories file by file.
func TestArchiveTestdataRepos(t *testing.T) {
	repos := filepath.Join(testenv.TestdataDir(t), "repos")
	dirs, err := os.ReadDir(repos)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("testdata repositories not found in %s (%v)", repos, err)
	}
	for _, d := range dirs {
		tree := filepath.Join(repos, d.Name())
		t.Run(d.Name(), func(t *testing.T) {
			data, es := archive(t, tree, nil)
			got, want := fileNames(es), gitOracle(t, tree)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("archived files differ from git's view\n got %v\nwant %v", got, want)
			}
			if d.Name() == "podinfo" || d.Name() == "flux2-kustomize-helm-example" {
				compareContents(t, data, tree, want)
			}
		})
	}
}

func compareContents(t *testing.T, data []byte, tree string, want []string) {
	t.Helper()
	seen := 0
	eachEntry(t, data, func(h *tar.Header, r io.Reader) {
		if h.Typeflag != tar.TypeReg {
			return
		}
		got, _ := io.ReadAll(r)
		orig, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(h.Name)))
		if err != nil || !bytes.Equal(got, orig) {
			t.Errorf("%s: archived content differs from the tree (%v)", h.Name, err)
		}
		seen++
	})
	if seen != len(want) || seen == 0 {
		t.Errorf("compared %d files, want %d", seen, len(want))
	}
}

func TestStorageArchiveVerifyServeAndCollect(t *testing.T) {
	st, err := artifact.NewStorage(filepath.Join(t.TempDir(), "data"), "", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	st.AdvAddr = strings.TrimPrefix(srv.URL, "http://")
	dir := artifact.ObjectDir("GitRepository", "flux-system", "podinfo")

	var arts []*meta.Artifact
	for i, content := range []string{"one", "two", "three"} {
		rev := "main@sha1:" + strings.Repeat(string(rune('a'+i)), 40)
		a, err := st.Archive(dir, artifact.FileName(rev), rev, writeTree(t, map[string]string{"f.yaml": content}), nil)
		if err != nil {
			t.Fatal(err)
		}
		arts = append(arts, a)
		time.Sleep(20 * time.Millisecond) // distinct modification times
	}
	a := arts[2]
	if a.Path != "gitrepository/flux-system/podinfo/"+strings.Repeat("c", 40)+".tar.gz" {
		t.Errorf("path %q", a.Path)
	}
	if a.URL != srv.URL+"/"+a.Path {
		t.Errorf("url %q, want %q", a.URL, srv.URL+"/"+a.Path)
	}
	resp, err := http.Get(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != a.Digest || int64(len(body)) != *a.Size {
		t.Errorf("served %d bytes with digest %s; artifact says %d bytes, %s", len(body), got, *a.Size, a.Digest)
	}
	if err := st.Verify(*a); err != nil {
		t.Errorf("Verify: %v", err)
	}

	deleted, err := st.GarbageCollect(*a)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 1 || deleted[0] != arts[0].Path {
		t.Errorf("GC deleted %v, want only the oldest %s", deleted, arts[0].Path)
	}
	if !st.Exists(*arts[1]) || !st.Exists(*a) {
		t.Error("GC deleted the current or the previous artifact")
	}
	st.RetentionTTL = 0
	if deleted, _ := st.GarbageCollect(*a); len(deleted) != 1 || !st.Exists(*a) {
		t.Errorf("GC past the TTL deleted %v; the current artifact must stay", deleted)
	}

	if err := os.WriteFile(st.LocalPath(*a), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Verify(*a); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("Verify of a tampered file: %v", err)
	}
	if err := st.RemoveObject(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.BasePath, "gitrepository", "flux-system", "podinfo")); !os.IsNotExist(err) {
		t.Errorf("object directory still exists: %v", err)
	}
}

// TestIgnoreNegationBelowExcludedDirectory follows Flux: paths are matched
// one by one, so a negation inside an excluded directory takes effect.
func TestIgnoreNegationBelowExcludedDirectory(t *testing.T) {
	root := writeTree(t, map[string]string{"apps/production/app.yaml": "p", "apps/staging/app.yaml": "s", "README.md": "r"})
	_, es := archive(t, root, ptr("/*\n!/apps/production/\n"))
	if got := fileNames(es); !reflect.DeepEqual(got, []string{"apps/production/app.yaml"}) {
		t.Errorf("files %v, want only apps/production/app.yaml", got)
	}
}

func TestGarbageCollectsStaleTemporaryFiles(t *testing.T) {
	st, err := artifact.NewStorage(t.TempDir(), "localhost", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	dir := artifact.ObjectDir("GitRepository", "ns", "name")
	a, err := st.Archive(dir, "abc.tar.gz", "main@sha1:abc", writeTree(t, map[string]string{"f": "x"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(filepath.Dir(st.LocalPath(*a)), ".abc.tar.gz.tmp-123")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := st.GarbageCollect(*a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a stale temporary file of a crashed archive was kept")
	}
}

// TestStorageCopyAndSymlink: Copy stores bytes atomically with their digest
// and size; Symlink points a stable name at the latest and is served; the
// garbage collection leaves the link and the current file.
func TestStorageCopyAndSymlink(t *testing.T) {
	st, err := artifact.NewStorage(t.TempDir(), "127.0.0.1:1", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Handler())
	defer srv.Close()
	st.AdvAddr = srv.URL
	var link string
	var last *meta.Artifact
	for i, content := range []string{"first", "second"} {
		a, err := st.Copy("helmrepository/ns/name", "index-"+content+".yaml", "sha256:"+content, strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		if a.Digest != "sha256:"+hex.EncodeToString(sum[:]) || *a.Size != int64(len(content)) || a.Revision != "sha256:"+content {
			t.Errorf("copy %d: artifact %+v", i, a)
		}
		if err := st.Verify(*a); err != nil {
			t.Error(err)
		}
		if link, err = st.Symlink(*a, "index.yaml"); err != nil {
			t.Fatal(err)
		}
		last = a
	}
	if want := srv.URL + "/helmrepository/ns/name/index.yaml"; link != want {
		t.Errorf("link URL %s, want %s", link, want)
	}
	if _, err := st.GarbageCollect(*last); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(st.BasePath, "helmrepository/ns/name"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{"index-second.yaml", "index.yaml"}) {
		t.Errorf("files after collection: %v", names)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "second" {
		t.Errorf("the link serves %q, want the latest", b)
	}
}
