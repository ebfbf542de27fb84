package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/source-controller/internal/helm/chart"
	"helm.sh/helm/v3/pkg/registry"
	helmrepo "helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartRepository returns the chart repository of a HelmRepository: for
// type oci a Helm registry client on spec.url, otherwise the index of its
// stored artifact. Credentials come from spec.secretRef (username,
// password), else for type oci from spec.provider's token service, and
// TLS settings from spec.certSecretRef (ca.crt, tls.crt, tls.key), as in
// Flux.
func (r *HelmChartReconciler) chartRepository(ctx context.Context, hr *sourcev1.HelmRepository) (chart.Repository, *reconciler.Failure) {
	// The same Secrets, and the same reading of them, as the index fetch.
	ic, err := newIndexClient(ctx, r.Client, hr)
	if err != nil {
		return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get authentication options for HelmRepository '%s': %s", hr.Name, err)
	}
	if f := helmProviderAuth(ctx, hr, ic); f != nil {
		return nil, f
	}
	user, pass, tlsCfg := ic.username, ic.password, ic.tls
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
	hc := &http.Client{Timeout: ic.timeout}
	if tlsCfg != nil {
		hc.Transport = &http.Transport{TLSClientConfig: tlsCfg, Proxy: http.ProxyFromEnvironment}
	}
	return &chart.HTTPRepository{URL: hr.Spec.URL, Index: idx, Client: hc, Username: user, Password: pass,
		PassCredentials: hr.Spec.PassCredentials, Limits: r.Limits}, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

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
		return chart.FetchIndex(ctx, &http.Client{Timeout: time.Minute}, repoURL, r.Limits) // Flux's default timeout
	}
}
