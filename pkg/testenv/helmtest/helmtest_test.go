package helmtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

// fetchIndex downloads the repository's index.yaml with Helm's repo package, as `helm repo
// add/update` does, into a temporary cache.
func fetchIndex(t *testing.T, entry repo.Entry) (*repo.IndexFile, error) {
	t.Helper()
	entry.Name = "test"
	r, err := repo.NewChartRepository(&entry, getter.All(cli.New()))
	if err != nil {
		t.Fatal(err)
	}
	r.CachePath = t.TempDir()
	path, err := r.DownloadIndexFile()
	if err != nil {
		return nil, err
	}
	return repo.LoadIndexFile(path)
}

// fetchChart downloads url with Helm's HTTP getter and loads the archive.
func fetchChart(t *testing.T, url string, opts ...getter.Option) *chart.Chart {
	t.Helper()
	g, err := getter.NewHTTPGetter()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := g.Get(url, opts...)
	if err != nil {
		t.Fatalf("getting %s: %v", url, err)
	}
	c, err := loader.LoadArchive(buf)
	if err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	return c
}

func TestPackageChartOverridesVersionAndValues(t *testing.T) {
	t.Parallel()
	dir := helmtest.MinimalChart(t, "hello", "0.1.0")
	tgz := helmtest.PackageChart(t, dir, helmtest.WithVersion("0.2.0"), helmtest.WithAppVersion("2.0"),
		helmtest.WithValues("greeting: bonjour\n"))
	if got := filepath.Base(tgz); got != "hello-0.2.0.tgz" {
		t.Errorf("archive name = %q, want hello-0.2.0.tgz", got)
	}
	c, err := loader.Load(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "0.2.0" || c.Metadata.AppVersion != "2.0" {
		t.Errorf("version, appVersion = %q, %q; want 0.2.0, 2.0", c.Metadata.Version, c.Metadata.AppVersion)
	}
	if c.Values["greeting"] != "bonjour" {
		t.Errorf("values = %v, want greeting: bonjour", c.Values)
	}
	// The packaged values.yaml is the one given, as `helm show values` would print it.
	for _, f := range c.Raw {
		if f.Name == "values.yaml" && string(f.Data) != "greeting: bonjour\n" {
			t.Errorf("values.yaml = %q", f.Data)
		}
	}
	// Without options the chart is packaged as it is.
	c, err = loader.Load(helmtest.PackageChart(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "0.1.0" || c.Values["greeting"] != "hello" {
		t.Errorf("unchanged chart: version %q, values %v", c.Metadata.Version, c.Values)
	}
}

func TestPackageChartPodinfo(t *testing.T) {
	t.Parallel()
	dir := helmtest.PodinfoChartDir(t)
	c, err := loader.Load(helmtest.PackageChart(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "podinfo" || c.Metadata.Version != "6.14.1" || len(c.Templates) == 0 {
		t.Errorf("podinfo: name %q version %q, %d templates", c.Name(), c.Metadata.Version, len(c.Templates))
	}
	c, err = loader.Load(helmtest.PackageChart(t, dir, helmtest.WithVersion("6.15.0")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "6.15.0" || c.Metadata.AppVersion != "6.14.1" {
		t.Errorf("new podinfo version: %q (app %q)", c.Metadata.Version, c.Metadata.AppVersion)
	}
}

func TestChartServerBasicAuth(t *testing.T) {
	t.Parallel()
	srv := helmtest.NewChartServer(t, helmtest.WithBasicAuth("flux", "s3cret"))
	dir := helmtest.MinimalChart(t, "hello", "0.1.0")
	srv.Add(helmtest.PackageChart(t, dir))
	auth := repo.Entry{URL: srv.URL(), Username: "flux", Password: "s3cret"}

	idx, err := fetchIndex(t, auth)
	if err != nil {
		t.Fatalf("index with credentials: %v", err)
	}
	cv, err := idx.Get("hello", "")
	if err != nil {
		t.Fatal(err)
	}
	if cv.Version != "0.1.0" || len(cv.URLs) != 1 || cv.URLs[0] != "hello-0.1.0.tgz" || cv.Digest == "" {
		t.Errorf("index entry: version %q URLs %v digest %q; want 0.1.0, [hello-0.1.0.tgz] (relative)", cv.Version, cv.URLs, cv.Digest)
	}
	c := fetchChart(t, srv.URL()+"/"+cv.URLs[0], getter.WithURL(srv.URL()),
		getter.WithBasicAuth("flux", "s3cret"))
	if c.Metadata.Version != "0.1.0" {
		t.Errorf("chart version = %q", c.Metadata.Version)
	}

	// A new version appears in the next index.
	srv.Add(helmtest.PackageChart(t, dir, helmtest.WithVersion("0.2.0")))
	if idx, err = fetchIndex(t, auth); err != nil {
		t.Fatal(err)
	}
	if cv, err = idx.Get("hello", ""); err != nil || cv.Version != "0.2.0" || len(idx.Entries["hello"]) != 2 {
		t.Errorf("after Add: latest %v (err %v), %d versions; want 0.2.0 of 2", cv, err, len(idx.Entries["hello"]))
	}

	// Without (or with wrong) credentials: 401, as Helm reports it.
	before := srv.Requests()
	for _, e := range []repo.Entry{{URL: srv.URL()}, {URL: srv.URL(), Username: "flux", Password: "wrong"}} {
		if _, err := fetchIndex(t, e); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("index as %q: err = %v, want a 401", e.Username, err)
		}
	}
	got := srv.Requests()
	if got.Unauthorized-before.Unauthorized != 2 || got.Index-before.Index != 2 {
		t.Errorf("counts %+v after %+v: want 2 more index requests, both unauthorized", got, before)
	}
	if got.Charts != 1 {
		t.Errorf("chart requests = %d, want 1", got.Charts)
	}
}

func TestChartServerTLSAndAbsoluteURLs(t *testing.T) {
	t.Parallel()
	srv := helmtest.NewChartServer(t, helmtest.WithTLS(), helmtest.WithAbsoluteURLs())
	if !strings.HasPrefix(srv.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL = %s", srv.URL())
	}
	srv.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "hello", "1.0.0")))
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, srv.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	idx, err := fetchIndex(t, repo.Entry{URL: srv.URL(), CAFile: caFile})
	if err != nil {
		t.Fatalf("index with the CA: %v", err)
	}
	cv, err := idx.Get("hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL() + "/hello-1.0.0.tgz"; len(cv.URLs) != 1 || cv.URLs[0] != want {
		t.Errorf("URLs = %v, want [%s]", cv.URLs, want)
	}
	fetchChart(t, cv.URLs[0], getter.WithTLSClientConfig("", "", caFile))
	// A client that does not trust the CA refuses the server.
	if _, err := fetchIndex(t, repo.Entry{URL: srv.URL()}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("index without the CA: err = %v, want a certificate error", err)
	}
}

func TestChartServerFailuresAndIndexOverride(t *testing.T) {
	t.Parallel()
	srv := helmtest.NewChartServer(t)
	srv.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "hello", "1.0.0")))
	for _, status := range []int{http.StatusUnauthorized, http.StatusNotFound, http.StatusInternalServerError} {
		srv.FailWith(status)
		if _, err := fetchIndex(t, repo.Entry{URL: srv.URL()}); err == nil || !strings.Contains(err.Error(), http.StatusText(status)) {
			t.Errorf("FailWith(%d): err = %v", status, err)
		}
	}
	srv.FailWith(0)
	srv.SetIndex([]byte("this is: [not an index"))
	if _, err := fetchIndex(t, repo.Entry{URL: srv.URL()}); err == nil {
		t.Error("SetIndex(garbage): the index loaded")
	}
	resp, err := http.Get(srv.URL() + "/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "this is: [not an index" {
		t.Errorf("served index = %q", body)
	}
	srv.SetIndex(nil)
	if idx, err := fetchIndex(t, repo.Entry{URL: srv.URL()}); err != nil || !idx.Has("hello", "1.0.0") {
		t.Errorf("after SetIndex(nil): %v", err)
	}
	if !bytes.Contains(srv.Index(), []byte("hello-1.0.0.tgz")) {
		t.Errorf("Index() = %s", srv.Index())
	}
	resp, err = http.Get(srv.URL() + "/missing-1.0.0.tgz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing chart: status %d", resp.StatusCode)
	}
}

// pull pulls ref with client and checks what Helm stored: an OCI manifest with Helm's config and
// chart-layer media types.
func pull(t *testing.T, client *registry.Client, ref string) *registry.PullResult {
	t.Helper()
	res, err := client.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	var m struct {
		Config struct {
			MediaType string `json:"mediaType"`
		} `json:"config"`
		Layers []struct {
			MediaType string `json:"mediaType"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(res.Manifest.Data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != registry.ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != registry.ChartLayerMediaType {
		t.Errorf("manifest of %s: %s", ref, res.Manifest.Data)
	}
	return res
}

func TestOCIRegistryPushPull(t *testing.T) {
	t.Parallel()
	reg := helmtest.NewOCIRegistry(t)
	if !strings.HasPrefix(reg.URL(), "oci://127.0.0.1:") || !strings.HasSuffix(reg.URL(), "/charts") {
		t.Fatalf("URL = %s", reg.URL())
	}
	dir := helmtest.MinimalChart(t, "hello", "0.1.0")
	tgz := helmtest.PackageChart(t, dir)
	pushed := reg.Push(t, tgz)
	if pushed.Ref != reg.Host()+"/charts/hello:0.1.0" || !strings.HasPrefix(pushed.Digest, "sha256:") {
		t.Errorf("pushed %+v", pushed)
	}
	reg.Push(t, helmtest.PackageChart(t, dir, helmtest.WithVersion("0.2.0")))

	client := reg.Client(t, "", "")
	res := pull(t, client, pushed.Ref)
	if res.Manifest.Digest != pushed.Digest {
		t.Errorf("pulled manifest %s, pushed %s", res.Manifest.Digest, pushed.Digest)
	}
	want, err := os.ReadFile(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Chart.Data, want) {
		t.Error("pulled chart layer differs from the pushed archive")
	}
	tags, err := client.Tags(reg.Host() + "/charts/hello")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tags, ",") != "0.2.0,0.1.0" {
		t.Errorf("tags = %v, want [0.2.0 0.1.0] (Helm sorts them by SemVer, newest first)", tags)
	}
}

func TestOCIRegistryBasicAuth(t *testing.T) {
	t.Parallel()
	reg := helmtest.NewOCIRegistry(t, helmtest.WithRegistryAuth("flux", "s3cret"))
	pushed := reg.Push(t, helmtest.PackageChart(t, helmtest.MinimalChart(t, "hello", "0.1.0")))
	pull(t, reg.Client(t, "flux", "s3cret"), pushed.Ref)
	// Without credentials the client meets the 401 challenge and has nothing to answer it with.
	_, err := reg.Client(t, "", "").Pull(pushed.Ref, registry.PullOptWithChart(true))
	if err == nil || !strings.Contains(err.Error(), "basic credential not found") {
		t.Errorf("pull without credentials: err = %v, want basic credential not found", err)
	}
	_, err = reg.Client(t, "flux", "wrong").Pull(pushed.Ref, registry.PullOptWithChart(true))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("pull with a wrong password: err = %v, want a 401", err)
	}
}
