package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testRegistry is an in-process registry (ggcr's pkg/registry) behind an
// optional wrapper, counting the tags/list requests that reach it.
type testRegistry struct {
	srv      *httptest.Server
	host     string // host:port of the image names
	tagLists atomic.Int64
	inner    http.Handler
}

func newRegistry(t *testing.T, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	r := &testRegistry{inner: ggcrregistry.New(ggcrregistry.Logger(nopLogger()))}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/tags/list") {
			r.tagLists.Add(1)
		}
		r.inner.ServeHTTP(w, req)
	})
	if wrap != nil {
		h = wrap(h)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// push writes a random image as repo:tag straight to the registry's
// handler (no wrapper) and returns its digest.
func (r *testRegistry) push(t *testing.T, repo string, tags ...string) v1.Hash {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	direct := httptest.NewServer(r.inner)
	defer direct.Close()
	host := strings.TrimPrefix(direct.URL, "http://")
	for _, tag := range tags {
		ref, err := name.NewTag(host + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := img.Digest()
	return d
}

// ca is a self-signed CA issuing server and client certificates.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eddy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key (PEM) for dnsName, for a server or
// a client.
func (c *ca) issue(t *testing.T, dnsName string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: dnsName},
		DNSNames: []string{dnsName}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// tlsRegistry is an in-process registry served over TLS as
// registry.eddy.test (a name ggcr does not take for a local plain-HTTP
// one); the returned Client dials that name to the server.
func tlsRegistry(t *testing.T, c *ca, clientCAs *x509.CertPool) (*testRegistry, *Client) {
	t.Helper()
	r := &testRegistry{inner: ggcrregistry.New(ggcrregistry.Logger(nopLogger()))}
	r.srv = httptest.NewUnstartedServer(r.inner)
	certPEM, keyPEM := c.issue(t, "registry.eddy.test", x509.ExtKeyUsageServerAuth)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	r.srv.Config.ErrorLog = nopLogger()
	if clientCAs != nil {
		r.srv.TLS.ClientCAs, r.srv.TLS.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	addr := r.srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	r.host = "registry.eddy.test:" + port
	cl := NewClient()
	cl.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return r, cl
}

// recorder buffers a handler's answer.
type recorder struct {
	header http.Header
	body   []byte
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }
