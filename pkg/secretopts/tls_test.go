package secretopts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"
)

// selfSigned returns a PEM certificate (usable as a CA) and its PEM key.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "eddy test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestCAIsAddedToTheRootsAndThePairIsTheClientCertificate(t *testing.T) {
	cert, key := selfSigned(t)
	cfg, err := TLSConfig(map[string][]byte{"ca.crt": cert, "tls.crt": cert, "tls.key": key}, false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("config: roots %v, %d certificates, min version %x", cfg.RootCAs != nil, len(cfg.Certificates), cfg.MinVersion)
	}
	caOnly, err := TLSConfig(map[string][]byte{"ca.crt": cert}, false)
	if err != nil || caOnly.RootCAs == nil || len(caOnly.Certificates) != 0 {
		t.Errorf("CA only: %v", err)
	}
}

func TestDeprecatedKeysAreReadOnlyWhenAskedAndTheNewKeyIsAbsent(t *testing.T) {
	cert, key := selfSigned(t)
	old := map[string][]byte{"caFile": cert, "certFile": cert, "keyFile": key}
	cfg, err := TLSConfig(old, true)
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Errorf("deprecated keys: %v", err)
	}
	if _, err := TLSConfig(old, false); !errors.Is(err, ErrNoTLSKeys) {
		t.Errorf("deprecated keys not asked for: %v, want ErrNoTLSKeys", err)
	}
	both := map[string][]byte{"ca.crt": []byte("junk"), "caFile": cert}
	if _, err := TLSConfig(both, true); !errors.Is(err, ErrInvalidCA) {
		t.Errorf("ca.crt beside caFile: %v, want ca.crt read", err)
	}
}

func TestTLSErrorsSayWhichKeyIsAtFault(t *testing.T) {
	cert, key := selfSigned(t)
	var missing *MissingKeyError
	var pair *KeyPairError
	for _, c := range []struct {
		name string
		data map[string][]byte
		is   func(error) bool
	}{
		{"nothing", map[string][]byte{"other": cert}, func(err error) bool { return errors.Is(err, ErrNoTLSKeys) }},
		{"empty values", map[string][]byte{"ca.crt": {}, "tls.crt": {}}, func(err error) bool { return errors.Is(err, ErrNoTLSKeys) }},
		{"cert alone", map[string][]byte{"tls.crt": cert}, func(err error) bool {
			return errors.As(err, &missing) && missing.Present == "tls.crt" && missing.Missing == "tls.key"
		}},
		{"key alone", map[string][]byte{"tls.key": key, "ca.crt": cert}, func(err error) bool {
			return errors.As(err, &missing) && missing.Present == "tls.key" && missing.Missing == "tls.crt"
		}},
		{"pair not PEM", map[string][]byte{"tls.crt": {1}, "tls.key": {2}}, func(err error) bool { return errors.As(err, &pair) }},
		{"pair before CA", map[string][]byte{"tls.crt": {1}, "tls.key": {2}, "ca.crt": []byte("junk")}, func(err error) bool { return errors.As(err, &pair) }},
		{"CA not PEM", map[string][]byte{"ca.crt": []byte("junk")}, func(err error) bool { return errors.Is(err, ErrInvalidCA) }},
	} {
		if _, err := TLSConfig(c.data, true); !c.is(err) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
