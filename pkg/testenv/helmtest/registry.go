package helmtest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
)

// OCIRegistry is an in-process OCI registry (go-containerregistry's pkg/registry, blobs in
// memory) served over plain HTTP on 127.0.0.1, holding charts under the repository "charts".
type OCIRegistry struct {
	srv      *httptest.Server
	user     string
	password string
}

// RegistryOption configures NewOCIRegistry.
type RegistryOption func(*OCIRegistry)

// WithRegistryAuth makes the registry require HTTP basic auth with this username and password
// on every request (the ping /v2/ included): any other request is answered 401 UNAUTHORIZED
// with a Basic challenge, as a registry without a token service does.
func WithRegistryAuth(username, password string) RegistryOption {
	return func(r *OCIRegistry) { r.user, r.password = username, password }
}

// NewOCIRegistry starts an empty registry and closes it by t.Cleanup.
func NewOCIRegistry(t testing.TB, opts ...RegistryOption) *OCIRegistry {
	t.Helper()
	r := &OCIRegistry{}
	for _, opt := range opts {
		opt(r)
	}
	// The registry logs every request; the tests look at results, not at that log.
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if r.user != "" || r.password != "" {
		h = testenv.RequireBasicAuth(h, r.user, r.password)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// Host returns the registry's host:port, 127.0.0.1:PORT.
func (r *OCIRegistry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// URL returns the chart repository URL as a HelmRepository of type oci or `helm push` takes
// it: oci://127.0.0.1:PORT/charts. A chart named N is at <URL>/N.
func (r *OCIRegistry) URL() string { return registry.OCIScheme + "://" + r.Host() + "/charts" }

// PushedChart describes a chart pushed by OCIRegistry.Push.
type PushedChart struct {
	// Name and Version are the chart's (the tag is the version).
	Name, Version string
	// Ref is the reference without scheme, 127.0.0.1:PORT/charts/<name>:<version>.
	Ref string
	// Digest is the manifest digest, sha256:<hex>.
	Digest string
}

// Push pushes the chart archive tgzPath to <URL>/<chart name>:<chart version> with Helm's push
// action and registry client, exactly as `helm push <tgz> <URL> --plain-http` stores it (OCI
// manifest with Helm's config and chart-layer media types, creation time from the file's
// modification time), using the registry's credentials if it has any.
func (r *OCIRegistry) Push(t testing.TB, tgzPath string) PushedChart {
	t.Helper()
	ch, err := loader.Load(tgzPath)
	if err != nil {
		t.Fatalf("helmtest: OCIRegistry.Push: loading %s: %v", filepath.Base(tgzPath), err)
	}
	client := r.Client(t, r.user, r.password)
	push := action.NewPushWithOpts(action.WithPushConfig(&action.Configuration{RegistryClient: client}),
		action.WithPlainHTTP(true))
	if _, err := push.Run(tgzPath, r.URL()); err != nil {
		t.Fatalf("helmtest: pushing %s to %s: %v", filepath.Base(tgzPath), r.URL(), err)
	}
	p := PushedChart{Name: ch.Name(), Version: ch.Metadata.Version}
	p.Ref = r.Host() + "/charts/" + p.Name + ":" + p.Version
	desc, err := client.Resolve(p.Ref)
	if err != nil {
		t.Fatalf("helmtest: resolving %s after the push: %v", p.Ref, err)
	}
	p.Digest = desc.Digest.String()
	return p
}

// Client returns a Helm registry client for this registry over plain HTTP, with these
// credentials (none when both are empty) and a credentials file of its own under t.TempDir(),
// so that it neither reads nor writes the user's Helm registry configuration.
func (r *OCIRegistry) Client(t testing.TB, username, password string) *registry.Client {
	t.Helper()
	opts := []registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry-config.json")),
	}
	if username != "" || password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(username, password))
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		t.Fatalf("helmtest: registry client: %v", err)
	}
	return c
}
