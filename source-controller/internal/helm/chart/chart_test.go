package chart

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// podinfoRoot returns a source tree holding the podinfo chart of the shared
// test data at charts/podinfo, as a GitRepository artifact would.
func podinfoRoot(t *testing.T) string {
	t.Helper()
	shared := os.Getenv("EDDY_SHARED_DIR")
	if shared == "" {
		t.Skip("EDDY_SHARED_DIR not set: the podinfo chart is in the shared test data")
	}
	src := filepath.Join(shared, "testdata", "repos", "podinfo", "charts", "podinfo")
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "charts", "podinfo"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func minimalChart(t *testing.T, dir, name, version string) {
	writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: "+name+"\nversion: "+version+"\n")
	writeFile(t, filepath.Join(dir, "values.yaml"), "key: "+name+"\n")
	writeFile(t, filepath.Join(dir, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+name+"\n")
}

func kindOf(t *testing.T, err error) Kind {
	t.Helper()
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("error %v is not a *BuildError", err)
	}
	return be.Kind
}

func TestBuildLocalPodinfo(t *testing.T) {
	root := podinfoRoot(t)
	b, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "./charts/podinfo"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "podinfo" || b.Version != "6.14.1" || !b.Packaged || b.Cached {
		t.Errorf("build %+v", b)
	}
	if got := b.Summary(); got != "packaged 'podinfo' chart with version '6.14.1'" || b.Reason() != sourcev1.ChartPackageSucceededReason {
		t.Errorf("summary %q reason %s", got, b.Reason())
	}
	c, err := LoadArchive(b.Data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "podinfo" || c.Metadata.Version != "6.14.1" || len(c.Templates) == 0 {
		t.Errorf("packaged chart %s %s with %d templates", c.Name(), c.Metadata.Version, len(c.Templates))
	}
}

// TestBuildLocalVersionMetadata: reconcileStrategy Revision and valuesFiles
// put Flux's build metadata on the version; values files merge in order
// into the packaged values.yaml.
func TestBuildLocalVersionMetadata(t *testing.T) {
	root := podinfoRoot(t)
	writeFile(t, filepath.Join(root, "override.yaml"), "replicaCount: 3\nui:\n  message: hello\n")
	for _, tc := range []struct {
		meta, want string
		values     []string
		summary    string
	}{
		{meta: "0123456789ab", want: "6.14.1+0123456789ab", summary: "packaged 'podinfo' chart with version '6.14.1+0123456789ab'"},
		{meta: "4", values: []string{"charts/podinfo/values.yaml", "override.yaml"}, want: "6.14.1+4",
			summary: "packaged 'podinfo' chart with version '6.14.1+4' and merged values files [charts/podinfo/values.yaml override.yaml]"},
		{meta: "0123456789ab.4", values: []string{"charts/podinfo/values-prod.yaml", "override.yaml"}, want: "6.14.1+0123456789ab.4",
			summary: "packaged 'podinfo' chart with version '6.14.1+0123456789ab.4' and merged values files [charts/podinfo/values-prod.yaml override.yaml]"},
	} {
		b, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", VersionMetadata: tc.meta, ValuesFiles: tc.values})
		if err != nil {
			t.Fatal(err)
		}
		if b.Version != tc.want || b.Summary() != tc.summary {
			t.Errorf("version %q summary %q; want %q, %q", b.Version, b.Summary(), tc.want, tc.summary)
		}
		c, err := LoadArchive(b.Data, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata.Version != tc.want {
			t.Errorf("packaged Chart.yaml version %q, want %q", c.Metadata.Version, tc.want)
		}
		if len(tc.values) == 0 {
			continue
		}
		var raw map[string]any
		for _, f := range c.Raw {
			if f.Name == "values.yaml" {
				if err := yaml.Unmarshal(f.Data, &raw); err != nil {
					t.Fatal(err)
				}
			}
		}
		ui, _ := raw["ui"].(map[string]any)
		img, _ := raw["image"].(map[string]any)
		if raw["replicaCount"] != float64(3) || ui["message"] != "hello" || ui["color"] != "#34577c" || img["repository"] != "ghcr.io/stefanprodan/podinfo" {
			t.Errorf("packaged values.yaml not the ordered deep merge: replicaCount=%v ui=%v image=%v", raw["replicaCount"], ui, img)
		}
	}
}

func TestBuildLocalValuesFilesErrors(t *testing.T) {
	root := podinfoRoot(t)
	_, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", VersionMetadata: "2", ValuesFiles: []string{"missing.yaml"}})
	if k := kindOf(t, err); k != ErrValuesFiles || !k.Persistent || err.Error() != "values files merge error: no values file found at path 'missing.yaml'" {
		t.Errorf("missing values file: %v", err)
	}
	b, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", VersionMetadata: "2",
		ValuesFiles: []string{"missing.yaml", "charts/podinfo/values-prod.yaml"}, IgnoreMissingValuesFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(b.ValuesFiles, ",") != "charts/podinfo/values-prod.yaml" {
		t.Errorf("merged %v, want only the present file", b.ValuesFiles)
	}
	_, err = BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", VersionMetadata: "2", ValuesFiles: []string{"../../etc/passwd"}})
	if k := kindOf(t, err); k != ErrValuesFiles || strings.Contains(err.Error(), root) {
		t.Errorf("values file outside the artifact: %v", err)
	}
}

// TestBuildLocalDependencies: missing dependencies come from charts/<name>,
// file:// paths inside the artifact and a resolved remote repository.
func TestBuildLocalDependencies(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "app", "Chart.yaml"), `apiVersion: v2
name: app
version: 1.0.0
dependencies:
- name: vendored
  version: "1.x"
- name: lib
  version: ">=0.1.0"
  repository: file://../lib
- name: remote
  alias: aliased
  version: "~2.0.0"
  repository: https://charts.example.com/stable
`)
	writeFile(t, filepath.Join(root, "app", "values.yaml"), "")
	minimalChart(t, filepath.Join(root, "app", "charts", "vendored"), "vendored", "1.2.0")
	minimalChart(t, filepath.Join(root, "lib"), "lib", "0.3.0")
	remote := packaged(t, "remote", "2.0.5")

	var asked string
	resolve := func(_ context.Context, u string) (Repository, error) {
		asked = u
		return fakeRepo{"remote": {{"2.0.5", remote}, {"2.1.0", nil}}}, nil
	}
	b, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "app", Repositories: resolve})
	if err != nil {
		t.Fatal(err)
	}
	// charts/vendored is already in the loaded chart; the other two are added.
	if b.ResolvedDependencies != 2 || asked != "https://charts.example.com/stable" {
		t.Errorf("resolved %d dependencies, asked for repository %q", b.ResolvedDependencies, asked)
	}
	c, err := LoadArchive(b.Data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range c.Dependencies() {
		got[d.Name()] = d.Metadata.Version
	}
	if len(got) != 3 || got["vendored"] != "1.2.0" || got["lib"] != "0.3.0" || got["aliased"] != "2.0.5" {
		t.Errorf("packaged dependencies %v", got)
	}

	// No repository for a remote dependency, and a local one out of range.
	_, err = BuildLocal(context.Background(), LocalOptions{Root: root, Path: "app"})
	if k := kindOf(t, err); k != ErrDependency || !strings.Contains(err.Error(), "no chart repository for URL 'https://charts.example.com/stable'") {
		t.Errorf("without repositories: %v", err)
	}
	writeFile(t, filepath.Join(root, "lib", "Chart.yaml"), "apiVersion: v2\nname: lib\nversion: 0.0.1\n")
	_, err = BuildLocal(context.Background(), LocalOptions{Root: root, Path: "app", Repositories: resolve})
	if k := kindOf(t, err); k != ErrDependency || !strings.Contains(err.Error(), "can't get a valid version for constraint '>=0.1.0'") {
		t.Errorf("out of range local dependency: %v", err)
	}
	// A file:// dependency must stay inside the artifact.
	writeFile(t, filepath.Join(root, "esc", "Chart.yaml"), "apiVersion: v2\nname: esc\nversion: 1.0.0\ndependencies:\n- name: x\n  repository: file://../../../x\n")
	_, err = BuildLocal(context.Background(), LocalOptions{Root: root, Path: "esc"})
	if k := kindOf(t, err); k != ErrDependency || !strings.Contains(err.Error(), "leaves the source artifact") || strings.Contains(err.Error(), root) {
		t.Errorf("escaping file:// dependency: %v", err)
	}
}

func TestBuildLocalCachedAndForced(t *testing.T) {
	root := podinfoRoot(t)
	cached := &Cached{Name: "podinfo", Version: "6.14.1"}
	b, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", Cached: cached})
	if err != nil || !b.Cached || b.Data != nil {
		t.Fatalf("cached build %+v, %v", b, err)
	}
	b, err = BuildLocal(context.Background(), LocalOptions{Root: root, Path: "charts/podinfo", Cached: cached, Force: true})
	if err != nil || b.Cached || b.Data == nil {
		t.Fatalf("forced build %+v, %v", b, err)
	}
}

func TestBuildLocalBadInput(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "notachart", "README.md"), "hello")
	writeFile(t, filepath.Join(root, "bad-version", "Chart.yaml"), "apiVersion: v2\nname: bad\nversion: not-semver\n")
	writeFile(t, filepath.Join(root, "big", "Chart.yaml"), "apiVersion: v2\nname: big\nversion: 1.0.0\n")
	writeFile(t, filepath.Join(root, "big", "templates", "big.yaml"), strings.Repeat("x", 2048))
	for _, tc := range []struct {
		path, meta string
		lim        Limits
		kind       Kind
		msg        string
	}{
		{path: "../outside", kind: ErrChartReference, msg: "invalid chart reference: path '../outside' leaves the source artifact"},
		{path: "missing", kind: ErrChartReference, msg: "invalid chart reference: no chart found at path 'missing'"},
		{path: "notachart", kind: ErrChartReference, msg: "Chart.yaml file is missing"},
		{path: "bad-version", meta: "abc", kind: ErrChartReference, msg: `chart.metadata.version "not-semver" is invalid`},
		{path: "big", lim: Limits{MaxFileSize: 1024}, kind: ErrChartReference, msg: "chart file 'big/templates/big.yaml' of 2048 bytes exceeds the maximum file size of 1024 bytes"},
		{path: "big", lim: Limits{MaxChartSize: 1024}, kind: ErrChartReference, msg: "chart at path 'big' exceeds the maximum chart size of 1024 bytes"},
	} {
		_, err := BuildLocal(context.Background(), LocalOptions{Root: root, Path: tc.path, VersionMetadata: tc.meta, Limits: tc.lim})
		if err == nil {
			t.Errorf("%s: no error", tc.path)
			continue
		}
		if k := kindOf(t, err); k != tc.kind || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), root) {
			t.Errorf("%s: %s error %q, want %s containing %q", tc.path, k.Reason, err, tc.kind.Reason, tc.msg)
		}
	}
}

// tgz writes a gzip tar of the given entries (name, content) in order.
func tgz(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var es []artifacttest.Entry
	for _, e := range entries {
		es = append(es, artifacttest.Entry{Name: e[0], Content: e[1]})
	}
	return artifacttest.TarGz(t, es...)
}

func packaged(t *testing.T, name, version string) []byte {
	t.Helper()
	return tgz(t, [2]string{name + "/Chart.yaml", "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n"},
		[2]string{name + "/values.yaml", "key: value\n"},
		[2]string{name + "/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
}

func TestLoadArchiveRefusesUnsafeArchives(t *testing.T) {
	chartYAML := "apiVersion: v2\nname: x\nversion: 1.0.0\n"
	for _, tc := range []struct {
		name string
		data []byte
		lim  Limits
		msg  string
	}{
		{"parent", tgz(t, [2]string{"x/Chart.yaml", chartYAML}, [2]string{"x/../../evil", "x"}), Limits{}, `chart archive entry "x/../../evil" leaves the chart directory`},
		{"dotdot", tgz(t, [2]string{"../x/Chart.yaml", chartYAML}), Limits{}, `chart archive entry "../x/Chart.yaml" leaves the chart directory`},
		{"absolute", tgz(t, [2]string{"/etc/passwd", "root"}), Limits{}, `chart archive entry "/etc/passwd" has an absolute path`},
		{"file size", tgz(t, [2]string{"x/Chart.yaml", chartYAML}, [2]string{"x/big", strings.Repeat("a", 600)}), Limits{MaxFileSize: 512}, `chart file "big" of 600 bytes exceeds the maximum file size of 512 bytes`},
		{"chart size", packaged(t, "x", "1.0.0"), Limits{MaxChartSize: 16}, "exceeds the maximum chart size of 16 bytes"},
		{"not gzip", []byte("plain text"), Limits{}, "chart archive is not gzip compressed"},
		{"empty", tgz(t), Limits{}, "no files in chart archive"},
		{"not a chart", tgz(t, [2]string{"x/README.md", "hi"}), Limits{}, "Chart.yaml file is missing"},
	} {
		_, err := LoadArchive(tc.data, tc.lim)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.msg)
		}
	}
	if c, err := LoadArchive(packaged(t, "x", "1.0.0"), Limits{}); err != nil || c.Name() != "x" {
		t.Errorf("valid archive: %v", err)
	}
}

func versions(vs ...string) repo.ChartVersions {
	var out repo.ChartVersions
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, v := range vs {
		out = append(out, &repo.ChartVersion{Metadata: &helmchart.Metadata{Name: "c", Version: v}, Created: base.Add(time.Duration(i) * time.Hour)})
	}
	return out
}

func TestSelectVersion(t *testing.T) {
	cands := versions("1.0.0", "1.2.0", "2.0.0-rc.1", "1.10.0", "v1.5.0", "1.10.0+build", "latest")
	for _, tc := range []struct{ version, want string }{
		{"", "1.10.0+build"}, // latest stable; equal versions: the later created
		{"*", "1.10.0+build"},
		{"1.2.0", "1.2.0"},
		{"~1.2", "1.2.0"},
		{"<1.5", "1.2.0"},
		{">=2.0.0-0", "2.0.0-rc.1"},
		{"latest", "latest"}, // exact string match first
		{"v1.5.0", "v1.5.0"},
	} {
		got, err := SelectVersion(cands, "c", tc.version)
		if err != nil || got.Version != tc.want {
			t.Errorf("SelectVersion(%q) = %v, %v; want %s", tc.version, got, err, tc.want)
		}
	}
	if _, err := SelectVersion(cands, "c", "3.x"); err == nil || err.Error() != "no 'c' chart with version matching '3.x' found" {
		t.Errorf("no match: %v", err)
	}
	if _, err := SelectVersion(nil, "c", ""); err == nil {
		t.Error("no entries: no error")
	}
}

// TestHTTPRepository serves an index and charts: relative and absolute
// chart URLs, basic auth only to the repository's host unless
// passCredentials, the size cap, and BuildRemote's pull and repackaging.
func TestHTTPRepository(t *testing.T) {
	chart1 := packaged(t, "x", "1.0.0")
	chart2 := packaged(t, "x", "1.1.0")
	var authSeen = map[string]string{}
	mux := http.NewServeMux()
	mux.HandleFunc("/charts/", func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		authSeen[r.Host+r.URL.Path] = u + ":" + p
		switch r.URL.Path {
		case "/charts/x-1.0.0.tgz":
			w.Write(chart1)
		case "/charts/x-1.1.0.tgz":
			w.Write(chart2)
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	other := httptest.NewServer(mux) // another host serving the same files
	defer other.Close()

	idx := repo.NewIndexFile()
	idx.Entries["x"] = versions("1.0.0", "1.1.0")
	idx.Entries["x"][0].URLs = []string{"x-1.0.0.tgz"}
	idx.Entries["x"][1].URLs = []string{other.URL + "/charts/x-1.1.0.tgz"}
	for _, cv := range idx.Entries["x"] {
		cv.Name = "x"
	}
	r := &HTTPRepository{URL: srv.URL + "/charts", Index: idx, Username: "u", Password: "p"}

	b, err := BuildRemote(context.Background(), r, RemoteOptions{Name: "x", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Data, chart1) || b.Packaged || b.Summary() != "pulled 'x' chart with version '1.0.0'" || b.Reason() != sourcev1.ChartPullSucceededReason {
		t.Errorf("pulled build %+v", b)
	}
	if authSeen[strings.TrimPrefix(srv.URL, "http://")+"/charts/x-1.0.0.tgz"] != "u:p" {
		t.Errorf("no basic auth to the repository host: %v", authSeen)
	}
	if _, err := BuildRemote(context.Background(), r, RemoteOptions{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := authSeen[strings.TrimPrefix(other.URL, "http://")+"/charts/x-1.1.0.tgz"]; got != ":" {
		t.Errorf("credentials %q sent to another host without passCredentials", got)
	}
	r.PassCredentials = true
	if _, err := BuildRemote(context.Background(), r, RemoteOptions{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := authSeen[strings.TrimPrefix(other.URL, "http://")+"/charts/x-1.1.0.tgz"]; got != "u:p" {
		t.Errorf("credentials %q with passCredentials", got)
	}

	// Values files from inside the chart, generation as metadata.
	b, err = BuildRemote(context.Background(), r, RemoteOptions{Name: "x", Version: "1.0.0", VersionMetadata: "3", ValuesFiles: []string{"values.yaml", "none.yaml"}, IgnoreMissingValuesFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != "1.0.0+3" || !b.Packaged || !strings.HasPrefix(b.Summary(), "packaged 'x' chart with version '1.0.0+3'") {
		t.Errorf("repackaged build %+v %q", b, b.Summary())
	}
	// Cached: not downloaded again.
	delete(authSeen, strings.TrimPrefix(srv.URL, "http://")+"/charts/x-1.0.0.tgz")
	b, err = BuildRemote(context.Background(), r, RemoteOptions{Name: "x", Version: "1.0.0", Cached: &Cached{Name: "x", Version: "1.0.0"}})
	if _, again := authSeen[strings.TrimPrefix(srv.URL, "http://")+"/charts/x-1.0.0.tgz"]; err != nil || !b.Cached || again {
		t.Errorf("cached build %+v, %v; requests %v", b, err, authSeen)
	}

	r.Limits = Limits{MaxChartSize: 64}
	_, err = BuildRemote(context.Background(), r, RemoteOptions{Name: "x", Version: "1.0.0"})
	if k := kindOf(t, err); k != ErrChartPull || !strings.Contains(err.Error(), "exceeds the maximum chart size of 64 bytes") {
		t.Errorf("oversized chart: %v", err)
	}
	_, err = BuildRemote(context.Background(), r, RemoteOptions{Name: "y"})
	if k := kindOf(t, err); k != ErrChartReference {
		t.Errorf("unknown chart: %v", err)
	}
	idx.Entries["x"][0].URLs = []string{"missing.tgz"}
	r.Limits = Limits{}
	_, err = BuildRemote(context.Background(), r, RemoteOptions{Name: "x", Version: "1.0.0"})
	if k := kindOf(t, err); k != ErrChartPull || !strings.Contains(err.Error(), "404 Not Found") {
		t.Errorf("missing chart file: %v", err)
	}
}

// fakeRepo serves charts from memory: name → versions with their archives.
type fakeRepo map[string][]struct {
	version string
	data    []byte
}

func (f fakeRepo) Select(_ context.Context, name, version string) (*repo.ChartVersion, error) {
	var cands repo.ChartVersions
	for _, v := range f[name] {
		cands = append(cands, &repo.ChartVersion{Metadata: &helmchart.Metadata{Name: name, Version: v.version}})
	}
	return SelectVersion(cands, name, version)
}

func (f fakeRepo) Download(_ context.Context, cv *repo.ChartVersion) ([]byte, error) {
	for _, v := range f[cv.Name] {
		if v.version == cv.Version {
			return v.data, nil
		}
	}
	return nil, errors.New("not found")
}

// TestNoTemporaryFilesLeft: builds, failed or not, leave nothing in the
// temporary directory.
func TestNoTemporaryFilesLeft(t *testing.T) {
	root := podinfoRoot(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, o := range []LocalOptions{
		{Root: root, Path: "charts/podinfo"},
		{Root: root, Path: "charts/podinfo", VersionMetadata: "1", ValuesFiles: []string{"charts/podinfo/values-prod.yaml"}},
		{Root: root, Path: "charts/podinfo", Limits: Limits{MaxFileSize: 10}},
		{Root: root, Path: "charts/podinfo", ValuesFiles: []string{"missing.yaml"}},
	} {
		_, _ = BuildLocal(context.Background(), o)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left in the temporary directory: %v", entries)
	}
}
