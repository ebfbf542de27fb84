package registry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Options are how one repository is reached: what an ImageRepository's spec
// says (insecure, timeout, secretRef and the ServiceAccount's pull secrets
// as a Keychain, certSecretRef as TLS, proxySecretRef as Proxy).
type Options struct {
	// Insecure is spec.insecure: plain HTTP (ggcr's name.Insecure).
	Insecure bool
	// Timeout spans one scan or one digest look-up, authentication
	// included; 0 means none.
	Timeout time.Duration
	// Keychain gives the credentials; nil means anonymous.
	Keychain *Keychain
	// TLS is from TLSFromSecretData; nil means the system's roots.
	TLS *tls.Config
	// Proxy is from ProxyFromSecretData; nil means the environment's
	// (HTTPS_PROXY, NO_PROXY), as Flux.
	Proxy *url.URL
}

// Secret keys Flux reads from a certSecretRef Secret (Opaque or
// kubernetes.io/tls); caFile, certFile and keyFile are the deprecated
// names, read when the new ones are absent.
const (
	CACertKey     = "ca.crt"
	ClientCertKey = "tls.crt"
	ClientKeyKey  = "tls.key"
)

// TLSFromSecretData builds the client TLS configuration of a certSecretRef
// Secret's data: `ca.crt` (PEM, added to the system roots), `tls.crt` and
// `tls.key` (PEM, a client certificate for mutual TLS; one without the
// other is an error). Errors name keys, never their content. Empty data is
// an error: such a Secret configures nothing.
func TLSFromSecretData(data map[string][]byte) (*tls.Config, error) {
	get := func(key, old string) []byte {
		if v, ok := data[key]; ok {
			return v
		}
		return data[old]
	}
	ca, cert, key := get(CACertKey, "caFile"), get(ClientCertKey, "certFile"), get(ClientKeyKey, "keyFile")
	if len(ca) == 0 && len(cert) == 0 && len(key) == 0 {
		return nil, errors.New("certSecretRef: none of ca.crt, tls.crt, tls.key found")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("certSecretRef: ca.crt holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if (len(cert) == 0) != (len(key) == 0) {
		return nil, errors.New("certSecretRef: tls.crt and tls.key must be given together")
	}
	if len(cert) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, errors.New("certSecretRef: tls.crt and tls.key are not a PEM certificate and its key")
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// ProxyFromSecretData builds the proxy URL of a proxySecretRef Secret's
// data: `address` (required, an http or https URL), `username` and
// `password` (optional, set as the URL's userinfo). Errors never quote the
// address (it may hold credentials).
func ProxyFromSecretData(data map[string][]byte) (*url.URL, error) {
	addr := string(data["address"])
	if addr == "" {
		return nil, errors.New("proxySecretRef: the address key is missing or empty")
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("proxySecretRef: address is not an http(s) URL with a host")
	}
	user, pass := string(data["username"]), string(data["password"])
	if user != "" || pass != "" {
		u.User = url.UserPassword(user, pass)
	}
	return u, nil
}

// secrets returns the credential values of o, to mask them in messages.
func (o Options) secrets() []string {
	var s []string
	if o.Keychain != nil {
		s = o.Keychain.secrets()
	}
	if o.Proxy != nil && o.Proxy.User != nil {
		p, _ := o.Proxy.User.Password()
		s = append(s, p, o.Proxy.User.String())
	}
	return s
}

func (o Options) String() string { return fmt.Sprintf("insecure=%t timeout=%s", o.Insecure, o.Timeout) }
