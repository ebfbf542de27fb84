package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	lru "github.com/hashicorp/golang-lru/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// notifier builds p's Notifier. Flux compatible secret keys: `address`
// (overrides spec.address), `token`, `username`/`password`, `headers` (YAML map), `creds`/`nkey` (nats),
// `proxy` (legacy); proxySecretRef `address`/`username`/`password`; certSecretRef
// `ca.crt`/`tls.crt`/`tls.key`. As in Flux, surrounding whitespace is
// trimmed from `address`, `token` and the proxy addresses (a Secret made
// with --from-file ends in a newline). Errors name Secrets and keys, never
// values.
func (s *EventServer) notifier(ctx context.Context, p *notificationv1.Provider) (notifier.Notifier, error) {
	opts := notifier.Options{
		Type: p.Spec.Type, Address: p.Spec.Address, Channel: p.Spec.Channel, Username: p.Spec.Username,
		ProviderUID: string(p.UID),
	}
	// v1 has no spec.proxy (Flux v2.10 dropped it): only the Secret's
	// legacy `proxy` key and proxySecretRef remain.
	var proxy string
	if p.Spec.SecretRef != nil {
		sec, err := s.secret(ctx, p.Namespace, p.Spec.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		if v, ok := sec.Data["address"]; ok {
			opts.Address = strings.TrimSpace(string(v))
		}
		opts.Token = strings.TrimSpace(string(sec.Data["token"]))
		// Flux's basic-auth keys; the secret's username wins over spec.username.
		if v, ok := sec.Data["username"]; ok {
			opts.Username = string(v)
		}
		opts.Password = string(sec.Data["password"])
		opts.Creds, opts.NKey = sec.Data["creds"], sec.Data["nkey"]
		if v, ok := sec.Data["proxy"]; ok {
			proxy = strings.TrimSpace(string(v))
		}
		if v, ok := sec.Data["headers"]; ok {
			if err := yaml.Unmarshal(v, &opts.Headers); err != nil {
				return nil, fmt.Errorf("secret %s: key headers is not a YAML map of strings", p.Spec.SecretRef.Name)
			}
		}
	}
	var (
		proxyURL *url.URL
		tlsCfg   *tls.Config
		key      = sha256.New() // what the transport is made of, secrets included
	)
	if p.Spec.ProxySecretRef != nil {
		sec, err := s.secret(ctx, p.Namespace, p.Spec.ProxySecretRef.Name)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(strings.TrimSpace(string(sec.Data["address"])))
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("secret %s: key address is not a proxy URL", p.Spec.ProxySecretRef.Name)
		}
		if user, ok := sec.Data["username"]; ok {
			u.User = url.UserPassword(string(user), string(sec.Data["password"]))
		}
		proxyURL = u
	} else if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("provider %s: the proxy is not a URL", p.Name)
		}
		proxyURL = u
	}
	if proxyURL != nil {
		fmt.Fprintf(key, "proxy %q\n", proxyURL.String())
	}
	if p.Spec.CertSecretRef != nil {
		sec, err := s.secret(ctx, p.Namespace, p.Spec.CertSecretRef.Name)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca, ok := sec.Data["ca.crt"]; ok {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("secret %s: key ca.crt holds no PEM certificate", p.Spec.CertSecretRef.Name)
			}
			cfg.RootCAs = pool
			fmt.Fprintf(key, "ca %q\n", ca)
		}
		if crt, ok := sec.Data["tls.crt"]; ok {
			pair, err := tls.X509KeyPair(crt, sec.Data["tls.key"])
			if err != nil {
				return nil, fmt.Errorf("secret %s: keys tls.crt and tls.key are not a key pair", p.Spec.CertSecretRef.Name)
			}
			cfg.Certificates = []tls.Certificate{pair}
			fmt.Fprintf(key, "cert %q %q\n", crt, sec.Data["tls.key"])
		}
		tlsCfg = cfg
		fmt.Fprintf(key, "tls\n")
	}
	opts.Client = s.client(p.UID, [32]byte(key.Sum(nil)), func() http.RoundTripper {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if proxyURL != nil {
			tr.Proxy = http.ProxyURL(proxyURL)
		}
		if tlsCfg != nil {
			tr.TLSClientConfig = tlsCfg
		}
		return tr
	})
	return notifier.New(opts)
}

// providerClient is the HTTP client of one Provider and what it was made of.
type providerClient struct {
	key    [32]byte
	client *notifier.Client
}

// maxProviderClients bounds the cached clients (and their idle
// connections); the least recently used is closed first.
const maxProviderClients = 1024

// client returns the Provider uid's client: the cached one while its
// proxy and TLS settings (key) are unchanged, so deliveries share one
// transport and its connections, else a new one over newTransport.
func (s *EventServer) client(uid types.UID, key [32]byte, newTransport func() http.RoundTripper) *notifier.Client {
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	if s.clients == nil {
		s.clients, _ = lru.NewWithEvict(maxProviderClients, func(_ types.UID, pc providerClient) { pc.client.CloseIdleConnections() })
	}
	pc, ok := s.clients.Get(uid)
	if ok && pc.key == key {
		return pc.client
	}
	if ok {
		pc.client.CloseIdleConnections() // its settings changed
	}
	retry := notifier.DefaultRetry
	if s.Retry != nil {
		retry = *s.Retry
	}
	c := notifier.NewClient(retry, newTransport())
	s.clients.Add(uid, providerClient{key: key, client: c})
	return c
}

func (s *EventServer) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := s.Secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return nil, fmt.Errorf("failed to get secret '%s/%s': %w", ns, name, err) // Flux's wording
	}
	return sec, nil
}
