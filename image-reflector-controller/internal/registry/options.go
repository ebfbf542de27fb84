package registry

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/eddyops/eddy/pkg/secretopts"
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
	Keychain Keychain
	// TLS is from TLSFromSecretData; nil means the system's roots.
	TLS *tls.Config
	// Proxy is from ProxyFromSecretData; nil means the environment's
	// (HTTPS_PROXY, NO_PROXY), as Flux.
	Proxy *url.URL
}

// TLSFromSecretData builds the client TLS configuration of a certSecretRef
// Secret's data (secretopts.TLSConfig, Flux's deprecated caFile, certFile
// and keyFile read when the new keys are absent): `ca.crt` (PEM, added to
// the system roots), `tls.crt` and `tls.key` (PEM, a client certificate
// for mutual TLS; one without the other is an error). Errors name keys,
// never their content. Empty data is an error: such a Secret configures
// nothing.
func TLSFromSecretData(data map[string][]byte) (*tls.Config, error) {
	cfg, err := secretopts.TLSConfig(data, true)
	var missing *secretopts.MissingKeyError
	var pair *secretopts.KeyPairError
	switch {
	case err == nil:
		return cfg, nil
	case errors.Is(err, secretopts.ErrNoTLSKeys), errors.Is(err, secretopts.ErrInvalidCA):
		return nil, fmt.Errorf("certSecretRef: %w", err)
	case errors.As(err, &missing):
		return nil, errors.New("certSecretRef: tls.crt and tls.key must be given together")
	case errors.As(err, &pair):
		return nil, errors.New("certSecretRef: tls.crt and tls.key are not a PEM certificate and its key")
	}
	return nil, err
}

// ProxyFromSecretData builds the proxy URL of a proxySecretRef Secret's
// data (secretopts.ProxyURL): `address` (required, an http or https URL),
// `username` and `password` (optional, set as the URL's userinfo). Errors
// never quote the address (it may hold credentials).
func ProxyFromSecretData(data map[string][]byte) (*url.URL, error) {
	u, err := secretopts.ProxyURL(data)
	switch {
	case errors.Is(err, secretopts.ErrNoProxyAddress):
		return nil, fmt.Errorf("proxySecretRef: %w", err)
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, errors.New("proxySecretRef: address is not an http(s) URL with a host")
	}
	return u, nil
}

// secrets returns the credential values of o, to mask them in messages.
func (o Options) secrets() []string {
	var s []string
	if o.Keychain != nil {
		s = keychainSecrets(o.Keychain)
	}
	if o.Proxy != nil && o.Proxy.User != nil {
		p, _ := o.Proxy.User.Password()
		s = append(s, p, o.Proxy.User.String())
	}
	return s
}

func (o Options) String() string { return fmt.Sprintf("insecure=%t timeout=%s", o.Insecure, o.Timeout) }
