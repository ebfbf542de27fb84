package builder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
)

// tree writes files (slash path → content) under a new directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// read returns the files of dir (slash path → content).
func read(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compose(t *testing.T, sources map[string]string, ops ...swv1.CopyOperation) (map[string]string, error) {
	t.Helper()
	dir := t.TempDir()
	err := Compose(context.Background(), ops, sources, dir)
	return read(t, dir), err
}

func op(from, to string, exclude ...string) swv1.CopyOperation {
	return swv1.CopyOperation{From: from, To: to, Exclude: exclude}
}

func keys(m map[string]string) []string {
	var k []string
	for p := range m {
		k = append(k, p)
	}
	sort.Strings(k)
	return k
}

// TestCopyExamplesOfFluxDocs: each copy example of Flux's
// artifactgenerators.md ("Copy operations use cp-like semantics") gives
// the files its comment says.
func TestCopyExamplesOfFluxDocs(t *testing.T) {
	src := tree(t, map[string]string{
		"config.yaml":               "a: 1\n",
		"configs/file1.yaml":        "f1\n",
		"configs/file2.yaml":        "f2\n",
		"configs/README.md":         "doc\n",
		"configs/subdir/file2.yaml": "s2\n",
		"configs/sub/testdata/x":    "x\n",
	})
	sources := map[string]string{"source": src}
	cases := []struct {
		name string
		op   swv1.CopyOperation
		want []string
	}{
		{"file to a file path", op("@source/config.yaml", "@artifact/apps/app.yaml"), []string{"apps/app.yaml"}},
		{"file into a directory", op("@source/config.yaml", "@artifact/apps/"), []string{"apps/config.yaml"}},
		{"glob of files into a directory", op("@source/configs/*.yaml", "@artifact/apps/"),
			[]string{"apps/configs/file1.yaml", "apps/configs/file2.yaml"}},
		{"directory as a subdirectory", op("@source/configs/", "@artifact/apps/"),
			[]string{"apps/configs/README.md", "apps/configs/file1.yaml", "apps/configs/file2.yaml", "apps/configs/sub/testdata/x", "apps/configs/subdir/file2.yaml"}},
		{"dir/** copies the contents, excludes apply", op("@source/configs/**", "@artifact/apps/", "*.md", "**/testdata/**", "subdir/**"),
			[]string{"apps/file1.yaml", "apps/file2.yaml"}},
		{"the source root's contents", op("@source/", "@artifact/"),
			[]string{"config.yaml", "configs/README.md", "configs/file1.yaml", "configs/file2.yaml", "configs/sub/testdata/x", "configs/subdir/file2.yaml"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := compose(t, sources, c.op)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(keys(got), c.want) {
				t.Errorf("files %q, want %q", keys(got), c.want)
			}
		})
	}
}

// TestLaterCopiesOverwrite: operations run in order, a later file wins,
// and a file copied to a path that is a directory goes into it.
func TestLaterCopiesOverwrite(t *testing.T) {
	a := tree(t, map[string]string{"deploy/app.yaml": "from a\n", "deploy/only-a.yaml": "a\n"})
	b := tree(t, map[string]string{"deploy/app.yaml": "from b\n", "env.yaml": "env\n"})
	got, err := compose(t, map[string]string{"backend": a, "frontend": b},
		op("@backend/deploy/**", "@artifact/my-app/"),
		op("@frontend/deploy/*.yaml", "@artifact/my-app/"),
		op("@frontend/env.yaml", "@artifact/my-app"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"my-app/app.yaml": "from a\n", "my-app/only-a.yaml": "a\n",
		"my-app/deploy/app.yaml": "from b\n", "my-app/env.yaml": "env\n",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestMergeIsHelmValuesMerge: the Merge strategy deep-merges maps and
// replaces lists (Flux's Helm chart composition example); without a file
// to merge into it copies.
func TestMergeIsHelmValuesMerge(t *testing.T) {
	chart := tree(t, map[string]string{
		"podinfo/Chart.yaml":  "name: podinfo\n",
		"podinfo/values.yaml": "replicaCount: 1\nimage:\n  repository: ghcr.io/podinfo\n  tag: 6.0.0\nports: [80, 443]\n",
	})
	repo := tree(t, map[string]string{"charts/podinfo/values-prod.yaml": "replicaCount: 3\nimage:\n  tag: 6.1.0\nports: [8080]\n"})
	sources := map[string]string{"chart": chart, "repo": repo}
	merge := op("@repo/charts/podinfo/values-prod.yaml", "@artifact/podinfo/values.yaml")
	merge.Strategy = swv1.MergeStrategy
	got, err := compose(t, sources, op("@chart/", "@artifact/"), merge)
	if err != nil {
		t.Fatal(err)
	}
	want := "image:\n  repository: ghcr.io/podinfo\n  tag: 6.1.0\nports:\n- 8080\nreplicaCount: 3\n"
	if got["podinfo/values.yaml"] != want {
		t.Errorf("merged values:\n%s\nwant:\n%s", got["podinfo/values.yaml"], want)
	}
	merge.To = "@artifact/new.yaml"
	got, err = compose(t, sources, merge)
	if err != nil || got["new.yaml"] != "replicaCount: 3\nimage:\n  tag: 6.1.0\nports: [8080]\n" {
		t.Errorf("merge without a destination: %v %q", err, got["new.yaml"])
	}
}

// tgz returns a tar.gz of files.
func tgz(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := artifact.WriteArchive(&buf, tree(t, files), nil); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestExtractUnpacksTarballs: a named tarball is unpacked into the
// destination; a recursive glob unpacks every tarball it finds and skips
// other files; a non-tarball file or a directory is refused.
func TestExtractUnpacksTarballs(t *testing.T) {
	src := tree(t, map[string]string{
		"podinfo-6.7.0.tgz":          tgz(t, map[string]string{"podinfo/Chart.yaml": "name: podinfo\n"}),
		"releases/a/one.tar.gz":      tgz(t, map[string]string{"one.yaml": "1\n"}),
		"releases/b/c/two.TGZ":       tgz(t, map[string]string{"two/two.yaml": "2\n"}),
		"releases/b/notes.txt":       "skip\n",
		"releases/b/c/not-a-tarball": "skip\n",
	})
	sources := map[string]string{"oci": src}
	ext := func(from, to string) swv1.CopyOperation {
		o := op(from, to)
		o.Strategy = swv1.ExtractStrategy
		return o
	}
	got, err := compose(t, sources, ext("@oci/podinfo-6.7.0.tgz", "@artifact/"))
	if err != nil || !reflect.DeepEqual(keys(got), []string{"podinfo/Chart.yaml"}) {
		t.Errorf("single tarball: %v %q", err, keys(got))
	}
	got, err = compose(t, sources, ext("@oci/releases/**/*", "@artifact/out/"))
	if err != nil || !reflect.DeepEqual(keys(got), []string{"out/one.yaml", "out/two/two.yaml"}) {
		t.Errorf("recursive glob: %v %q", err, keys(got))
	}
	if _, err := compose(t, sources, ext("@oci/releases/b/notes.txt", "@artifact/")); err == nil ||
		!strings.Contains(err.Error(), "takes .tar.gz or .tgz files") {
		t.Errorf("a text file extracted: %v", err)
	}
	if _, err := compose(t, sources, ext("@oci/releases/", "@artifact/")); err == nil ||
		!strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory extracted: %v", err)
	}
}

// TestCopyErrors: the failures Flux reports, each naming the operation.
func TestCopyErrors(t *testing.T) {
	sources := map[string]string{"src": tree(t, map[string]string{"a/b.yaml": "b\n", "a/c.md": "c\n"})}
	cases := []struct {
		op   swv1.CopyOperation
		want string
	}{
		{op("@src/missing.yaml", "@artifact/"), "copy from '@src/missing.yaml' to '@artifact/': source 'missing.yaml' does not exist"},
		{op("@src/a/*.json", "@artifact/"), "no files match pattern 'a/*.json' in source 'src'"},
		{op("@src/a/[.yaml", "@artifact/"), "invalid glob pattern 'a/[.yaml'"},
		{op("@other/a", "@artifact/"), "source alias 'other' not found"},
		{op("@src/a/*", "@artifact/", "*.yaml", "*.md"), "all files matching pattern 'a/*' in source 'src' were excluded"},
		{op("@src/a/*", "@artifact/", "[z"), "invalid exclude pattern '[z'"},
		{op("@src/a/b.yaml", "@elsewhere/x"), "destination must start with '@artifact/'"},
	}
	for _, c := range cases {
		if _, err := compose(t, sources, c.op); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: error %v, want it to contain %q", c.op.From, c.op.To, err, c.want)
		}
	}
}

// TestCopyStaysInsideTheArtifact: a destination with ".." cannot write
// outside the artifact's directory.
func TestCopyStaysInsideTheArtifact(t *testing.T) {
	sources := map[string]string{"src": tree(t, map[string]string{"a.yaml": "a\n"})}
	parent := t.TempDir()
	dir := filepath.Join(parent, "artifact")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err := Compose(context.Background(), []swv1.CopyOperation{op("@src/a.yaml", "@artifact/../escaped.yaml")}, sources, dir)
	if _, statErr := os.Stat(filepath.Join(parent, "escaped.yaml")); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatalf("a file was written outside the artifact (err %v)", err)
	}
}

// TestBuildStoresAContentAddressedArtifact: the revision is
// latest@sha256 of the stored bytes, the file is named by that hex, the
// archive holds the composed files, and the same content gives the same
// artifact; a failing build stores nothing.
func TestBuildStoresAContentAddressedArtifact(t *testing.T) {
	storage, err := artifact.NewStorage(t.TempDir(), "localhost:9090", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{"repo": tree(t, map[string]string{"deploy/frontend/app.yaml": "kind: ConfigMap\n"})}
	oa := swv1.OutputArtifact{Name: "frontend", Copy: []swv1.CopyOperation{op("@repo/deploy/frontend/**", "@artifact/")}}
	a, err := Build(context.Background(), storage, "apps", oa, sources, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(a.Digest, "sha256:")
	if a.Revision != "latest@"+a.Digest || a.Path != "externalartifact/apps/frontend/"+hex+".tar.gz" ||
		a.URL != "http://localhost:9090/"+a.Path {
		t.Errorf("artifact %+v", a)
	}
	if err := storage.Verify(*a); err != nil {
		t.Error(err)
	}
	f, err := os.Open(storage.LocalPath(*a))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for h, err := tr.Next(); err == nil; h, err = tr.Next() {
		names = append(names, h.Name)
	}
	if !reflect.DeepEqual(names, []string{".", "app.yaml"}) {
		t.Errorf("archive entries %q", names)
	}
	again, err := Build(context.Background(), storage, "apps", oa, sources, t.TempDir())
	if err != nil || again.Digest != a.Digest {
		t.Errorf("same content, digest %s then %s (%v)", a.Digest, again.Digest, err)
	}
	bad := swv1.OutputArtifact{Name: "bad", Copy: []swv1.CopyOperation{op("@repo/missing", "@artifact/")}}
	if _, err := Build(context.Background(), storage, "apps", bad, sources, t.TempDir()); err == nil {
		t.Fatal("a build with a missing file succeeded")
	}
	if _, err := os.Stat(filepath.Join(storage.BasePath, "externalartifact", "apps", "bad")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed build left something in storage: %v", err)
	}
}
