package cloudauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
)

// HTTPClient returns a client for a token service: the system's roots plus
// caPEM when set, and proxy when set (else the environment's proxy).
func HTTPClient(caPEM []byte, proxy *url.URL) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("no certificate found in the CA bundle")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if proxy != nil {
		t.Proxy = http.ProxyURL(proxy)
	}
	return &http.Client{Transport: t}, nil
}
