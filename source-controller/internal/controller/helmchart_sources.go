package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/reconcile"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/source-controller/internal/helm/chart"
	"helm.sh/helm/v3/pkg/registry"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartRepository returns the chart repository of a HelmRepository: for
// type oci a Helm registry client on spec.url, otherwise the index of its
// stored artifact. Credentials come from spec.secretRef (username,
// password) and TLS settings from spec.certSecretRef (ca.crt, tls.crt,
// tls.key), as in Flux.
func (r *HelmChartReconciler) chartRepository(ctx context.Context, hr *sourcev1.HelmRepository) (chart.Repository, *reconcile.Failure) {
	user, pass, tlsCfg, err := r.repositoryAuth(ctx, hr)
	if err != nil {
		return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get authentication options for HelmRepository '%s': %s", hr.Name, err)
	}
	if hr.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		u, err := url.Parse(hr.Spec.URL)
		if err != nil || u.Scheme != "oci" || u.Host == "" {
			return nil, fetchFailed(sourcev1.URLInvalidReason, "invalid OCI registry URL: %s", redact.URL(hr.Spec.URL)).Stall()
		}
		opts := []registry.ClientOption{registry.ClientOptEnableCache(false), registry.ClientOptWriter(discard{})}
		if hr.Spec.Insecure {
			opts = append(opts, registry.ClientOptPlainHTTP())
		}
		if user != "" || pass != "" {
			opts = append(opts, registry.ClientOptBasicAuth(user, pass))
		}
		if tlsCfg != nil {
			opts = append(opts, registry.ClientOptHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}}))
		}
		c, err := registry.NewClient(opts...)
		if err != nil {
			return nil, fetchFailed("Failed", "failed to construct Helm client: %s", err)
		}
		return &chart.OCIRepository{URL: hr.Spec.URL, Client: c, Limits: r.Limits}, nil
	}
	idx, err := helmrepo.LoadIndexFile(r.Storage.LocalPath(*hr.Status.Artifact))
	if err != nil {
		return nil, fetchFailed(sourcev1.IndexationFailedReason, "failed to load the index of HelmRepository '%s': %s", hr.Name,
			strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", ""))
	}
	hc := &http.Client{Timeout: repositoryTimeout(hr)}
	if tlsCfg != nil {
		hc.Transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}
	}
	return &chart.HTTPRepository{URL: hr.Spec.URL, Index: idx, Client: hc, Username: user, Password: pass,
		PassCredentials: hr.Spec.PassCredentials, Limits: r.Limits}, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// repositoryAuth reads the HelmRepository's secrets.
func (r *HelmChartReconciler) repositoryAuth(ctx context.Context, hr *sourcev1.HelmRepository) (user, pass string, cfg *tls.Config, err error) {
	get := func(name string) (map[string][]byte, error) {
		s := &corev1.Secret{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: hr.Namespace, Name: name}, s); err != nil {
			return nil, fmt.Errorf("failed to get secret '%s/%s': %s", hr.Namespace, name, err)
		}
		return s.Data, nil
	}
	if ref := hr.Spec.SecretRef; ref != nil {
		data, err := get(ref.Name)
		if err != nil {
			return "", "", nil, err
		}
		user, pass = string(data["username"]), string(data["password"])
		if (user == "") != (pass == "") {
			return "", "", nil, fmt.Errorf("secret '%s/%s' must hold both 'username' and 'password'", hr.Namespace, ref.Name)
		}
	}
	if ref := hr.Spec.CertSecretRef; ref != nil {
		data, err := get(ref.Name)
		if err != nil {
			return "", "", nil, err
		}
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := data["ca.crt"]; len(ca) > 0 {
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(ca) {
				return "", "", nil, errors.New("'ca.crt' holds no PEM certificate")
			}
		}
		if crt, key := data["tls.crt"], data["tls.key"]; len(crt) > 0 || len(key) > 0 {
			pair, err := tls.X509KeyPair(crt, key)
			if err != nil {
				return "", "", nil, errors.New("invalid 'tls.crt' and 'tls.key' pair")
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
	}
	return user, pass, cfg, nil
}

// dependencyRepositories resolves a chart dependency's repository URL to the
// HelmRepository of the namespace with that URL (trailing slashes ignored),
// or else to the repository itself without credentials, as Flux does.
func (r *HelmChartReconciler) dependencyRepositories(namespace string) chart.RepositoryResolver {
	return func(ctx context.Context, repoURL string) (chart.Repository, error) {
		list := &sourcev1.HelmRepositoryList{}
		if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return nil, fmt.Errorf("unable to list HelmRepositories: %s", err)
		}
		want := strings.TrimSuffix(repoURL, "/")
		for i := range list.Items {
			hr := &list.Items[i]
			if strings.TrimSuffix(hr.Spec.URL, "/") != want {
				continue
			}
			if hr.Spec.Type != sourcev1.HelmRepositoryTypeOCI && (hr.Status.Artifact == nil || !r.Storage.Exists(*hr.Status.Artifact)) {
				return nil, fmt.Errorf("HelmRepository '%s' has no artifact yet", hr.Name)
			}
			cr, f := r.chartRepository(ctx, hr)
			if f != nil {
				return nil, errors.New(f.Message)
			}
			return cr, nil
		}
		// Flux compatible: a repository no HelmRepository describes is used
		// anonymously.
		if strings.HasPrefix(repoURL, "oci://") {
			c, err := registry.NewClient(registry.ClientOptEnableCache(false), registry.ClientOptWriter(discard{}))
			if err != nil {
				return nil, fmt.Errorf("failed to construct Helm client: %s", err)
			}
			return &chart.OCIRepository{URL: repoURL, Client: c, Limits: r.Limits}, nil
		}
		return chart.FetchIndex(ctx, &http.Client{Timeout: repositoryTimeout(nil)}, repoURL, r.Limits)
	}
}

// repositoryTimeout is a HelmRepository's spec.timeout, Flux's 60s default
// when unset (or for a repository without HelmRepository).
func repositoryTimeout(hr *sourcev1.HelmRepository) time.Duration {
	if hr != nil && hr.Spec.Timeout != nil {
		return hr.Spec.Timeout.Duration
	}
	return 60 * time.Second
}
