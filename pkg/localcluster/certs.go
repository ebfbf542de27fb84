package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material of one local cluster: a CA that signs the
// apiserver's serving certificate and the admin client certificate, and the
// service-account signing key.
type pki struct {
	caCert, caKey           []byte // PEM
	servingCert, servingKey []byte
	adminCert, adminKey     []byte
	saKey                   []byte // PEM EC private key; the apiserver derives the public key

	ca       *x509.Certificate // signs the certificates issue makes
	caSigner crypto.Signer
	serial   int64 // of the last certificate issued
}

// newPKI makes the key material; the serving certificate is valid for
// 127.0.0.1, the kubernetes Service's serviceIP and extraIPs.
func newPKI(serviceIP net.IP, extraIPs ...net.IP) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "eddy-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &pki{caCert: pemBlock("CERTIFICATE", caDER), ca: ca, caSigner: caKey, serial: 1}
	if p.caKey, err = pemECKey(caKey); err != nil {
		return nil, err
	}
	p.servingCert, p.servingKey, err = p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), serviceIP}, extraIPs...),
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}
	// system:masters is bound to cluster-admin by the apiserver's bootstrap RBAC.
	p.adminCert, p.adminKey, err = p.issueClient("eddy-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	p.saKey, err = pemECKey(saKey)
	return p, err
}

// issue signs tmpl, with a new key, by the CA: valid from an hour ago for
// ten years. It returns the certificate and key as PEM.
func (p *pki) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p.serial++
	now := time.Now()
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caSigner)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = pemECKey(key)
	return pemBlock("CERTIFICATE", der), keyPEM, err
}

// issueClient issues a client certificate for user cn in groups orgs.
func (p *pki) issueClient(cn string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	return p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// write stores the PEM files under dir/pki and returns their paths by name.
func (p *pki) write(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"ca.crt": p.caCert, "ca.key": p.caKey,
		"apiserver.crt": p.servingCert, "apiserver.key": p.servingKey,
		"admin.crt": p.adminCert, "admin.key": p.adminKey,
		"sa.key": p.saKey,
	}
	paths := map[string]string{}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
		paths[name] = path
	}
	return paths, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pemECKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}
