package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// notifier builds p's Notifier. Flux compatible secret keys: `address`
// (overrides spec.address), `token`, `headers` (YAML map), `proxy`
// (legacy); proxySecretRef `address`/`username`/`password`; certSecretRef
// `ca.crt`/`tls.crt`/`tls.key`. As in Flux, surrounding whitespace is
// trimmed from `address`, `token` and the proxy addresses (a Secret made
// with --from-file ends in a newline). Errors name Secrets and keys, never
// values.
func (s *EventServer) notifier(ctx context.Context, p *notificationv1beta3.Provider) (notifier.Notifier, error) {
	opts := notifier.Options{
		Type: p.Spec.Type, Address: p.Spec.Address, Channel: p.Spec.Channel, Username: p.Spec.Username,
		ProviderUID: string(p.UID),
	}
	proxy := p.Spec.Proxy
	if p.Spec.SecretRef != nil {
		sec, err := s.secret(ctx, p.Namespace, p.Spec.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		if v, ok := sec.Data["address"]; ok {
			opts.Address = strings.TrimSpace(string(v))
		}
		opts.Token = strings.TrimSpace(string(sec.Data["token"]))
		if v, ok := sec.Data["proxy"]; ok {
			proxy = strings.TrimSpace(string(v))
		}
		if v, ok := sec.Data["headers"]; ok {
			if err := yaml.Unmarshal(v, &opts.Headers); err != nil {
				return nil, fmt.Errorf("secret %s: key headers is not a YAML map of strings", p.Spec.SecretRef.Name)
			}
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
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
		tr.Proxy = http.ProxyURL(u)
	} else if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("provider %s: the proxy is not a URL", p.Name)
		}
		tr.Proxy = http.ProxyURL(u)
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
		}
		if crt, ok := sec.Data["tls.crt"]; ok {
			pair, err := tls.X509KeyPair(crt, sec.Data["tls.key"])
			if err != nil {
				return nil, fmt.Errorf("secret %s: keys tls.crt and tls.key are not a key pair", p.Spec.CertSecretRef.Name)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		tr.TLSClientConfig = cfg
	}
	retry := notifier.DefaultRetry
	if s.Retry != nil {
		retry = *s.Retry
	}
	opts.Client = notifier.NewClient(retry, tr)
	return notifier.New(opts)
}

func (s *EventServer) secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := s.Secrets.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return nil, fmt.Errorf("failed to get secret '%s/%s': %w", ns, name, err) // Flux's wording
	}
	return sec, nil
}
