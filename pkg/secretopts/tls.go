package secretopts

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// Keys of a TLS Secret (Opaque or kubernetes.io/tls), as Flux names them.
// The Deprecated ones are Flux's older names, read in place of an absent
// new key when TLSConfig is asked to.
const (
	CACertKey     = "ca.crt"
	ClientCertKey = "tls.crt"
	ClientKeyKey  = "tls.key"

	DeprecatedCACertKey     = "caFile"
	DeprecatedClientCertKey = "certFile"
	DeprecatedClientKeyKey  = "keyFile"
)

// ErrNoTLSKeys is TLSConfig's error for data with none of the keys (or
// only empty values): such a Secret configures nothing.
var ErrNoTLSKeys = errors.New("none of ca.crt, tls.crt, tls.key found")

// ErrInvalidCA is TLSConfig's error for a `ca.crt` with no PEM certificate.
var ErrInvalidCA = errors.New("ca.crt holds no PEM certificate")

// MissingKeyError is a client certificate without its key or a key without
// its certificate.
type MissingKeyError struct {
	// Present is the key found (tls.crt or tls.key), Missing the other.
	Present, Missing string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("'%s' is set but '%s' is missing", e.Present, e.Missing)
}

// KeyPairError is a `tls.crt` and `tls.key` that crypto/tls does not
// accept as a PEM certificate and its key; Err is crypto/tls's error,
// which names no value.
type KeyPairError struct{ Err error }

func (e *KeyPairError) Error() string { return "invalid client certificate and key: " + e.Err.Error() }

func (e *KeyPairError) Unwrap() error { return e.Err }

// TLSConfig builds a client TLS configuration (TLS 1.2 at least) from a
// Secret's data: `ca.crt` (PEM, added to the system roots) and
// `tls.crt` with `tls.key` (PEM, a client certificate for mutual TLS).
// With deprecated, `caFile`, `certFile` and `keyFile` are read where the
// new key is absent. An empty value counts as absent. Errors, checked in
// this order: ErrNoTLSKeys, *MissingKeyError, *KeyPairError,
// ErrInvalidCA.
func TLSConfig(data map[string][]byte, deprecated bool) (*tls.Config, error) {
	get := func(key, old string) []byte {
		if v, ok := data[key]; ok || !deprecated {
			return v
		}
		return data[old]
	}
	ca := get(CACertKey, DeprecatedCACertKey)
	cert := get(ClientCertKey, DeprecatedClientCertKey)
	key := get(ClientKeyKey, DeprecatedClientKeyKey)
	switch {
	case len(ca) == 0 && len(cert) == 0 && len(key) == 0:
		return nil, ErrNoTLSKeys
	case len(cert) > 0 && len(key) == 0:
		return nil, &MissingKeyError{Present: ClientCertKey, Missing: ClientKeyKey}
	case len(key) > 0 && len(cert) == 0:
		return nil, &MissingKeyError{Present: ClientKeyKey, Missing: ClientCertKey}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cert) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, &KeyPairError{Err: err}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, ErrInvalidCA
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
