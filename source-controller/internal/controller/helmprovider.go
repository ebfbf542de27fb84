package controller

import (
	"context"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/reconciler"
)

// helmProviderAuth puts spec.provider's registry credentials in ic for an
// OCI HelmRepository without spec.secretRef, as Flux does; an HTTP
// HelmRepository's provider is ignored, also as Flux (OCI only). Every
// provider but generic is passed to package cloudauth, which answers those
// it does not implement with an error. A HelmRepository has no
// proxySecretRef: the token service is reached through the environment's
// proxy.
func helmProviderAuth(ctx context.Context, hr *sourcev1.HelmRepository, ic *indexClient) *reconciler.Failure {
	p := hr.Spec.Provider
	if hr.Spec.Type != sourcev1.HelmRepositoryTypeOCI || hr.Spec.SecretRef != nil || p == "" || p == sourcev1.OCIProviderGeneric {
		return nil
	}
	hc, err := cloudauth.HTTPClient(nil, nil)
	var creds cloudauth.Credentials
	if err == nil {
		creds, err = cloudauth.RegistryCredentials(ctx, p, strings.TrimPrefix(hr.Spec.URL, sourcev1.OCIRepositoryPrefix), hc)
	}
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get credential from '%s': %s", p, err)
	}
	ic.username, ic.password = creds.Username, creds.Password
	return nil
}
