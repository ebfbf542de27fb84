package cloudfake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

// The fakes' TLS certificate: self-signed, one per process, valid for the
// cloud hosts the fakes stand for and loopback.
var (
	certOnce sync.Once
	cert     tls.Certificate
	certPEM  []byte
)

// fakeHosts are the names the certificate is valid for.
var fakeHosts = []string{"*.azurecr.io", "*.azurecr.cn", "*.azurecr.us", "*.azurecr.de", "localhost"}

// TLSCertificate is the fakes' certificate and key.
func TLSCertificate() tls.Certificate {
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eddy cloud fakes"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
			DNSNames: fakeHosts, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	})
	return cert
}

// WriteTrust writes the fakes' certificate, then the system's CA bundle
// when there is one, to path: for SSL_CERT_FILE, set before the process
// (and the controllers it starts) first read their trust roots.
func WriteTrust(path string) error {
	TLSCertificate()
	out := append([]byte(nil), certPEM...)
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"} {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, b...)
			break
		}
	}
	return os.WriteFile(path, out, 0o600)
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
