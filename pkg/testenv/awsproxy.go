package testenv

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// AWSProxy is an HTTP proxy that stands in for AWS's STS endpoints: a
// CONNECT to sts.amazonaws.com or sts.<region>.amazonaws.com is answered
// with TLS under a certificate of its own CA (CAFile, for AWS_CA_BUNDLE)
// and its requests are served by Target (e.g. a cloudfake.AWS); plain HTTP
// requests are forwarded where they go. It lets a controller that accepts
// only AWS's STS endpoints be tested against a fake.
type AWSProxy struct {
	URL    string
	CAFile string
	target *url.URL
	cert   tls.Certificate
}

// NewAWSProxy starts the proxy in front of target and closes it by
// t.Cleanup.
func NewAWSProxy(t testing.TB, target string) *AWSProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &AWSProxy{target: u}
	caPEM, cert, err := stsCertificate()
	if err != nil {
		t.Fatal(err)
	}
	p.cert = cert
	p.CAFile = filepath.Join(t.TempDir(), "aws-ca.pem")
	if err := os.WriteFile(p.CAFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// stsCertificate makes a CA and a certificate of the STS hosts it signs.
func stsCertificate() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eddy test AWS CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sts.amazonaws.com"},
		DNSNames:  []string{"sts.amazonaws.com", "sts.us-east-1.amazonaws.com", "sts.eu-west-1.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func (p *AWSProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host }}).ServeHTTP(w, r)
		return
	}
	host := strings.TrimSuffix(r.Host, ":443")
	if !strings.HasPrefix(host, "sts.") || !strings.HasSuffix(host, ".amazonaws.com") {
		http.Error(w, "this proxy reaches AWS's STS only", http.StatusForbidden)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{p.cert}, MinVersion: tls.VersionTLS12})
	br := bufio.NewReader(tc)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.RequestURI = ""
		req.URL.Scheme, req.URL.Host = p.target.Scheme, p.target.Host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return
		}
		err = resp.Write(tc)
		resp.Body.Close()
		if err != nil {
			return
		}
	}
}
