package controller

import (
	"context"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/secretopts"
	"github.com/fluxcd/pkg/apis/meta"
)

// ociProviders are the OCIRepository providers Eddy gets registry
// credentials from (package cloudauth).
var ociProviders = map[string]bool{sourcev1.OCIProviderAWS: true, sourcev1.OCIProviderAzure: true, sourcev1.OCIProviderGCP: true}

// ociProviderAuth puts spec.provider's registry credentials in t when
// neither spec.secretRef nor the service account's pull secrets gave any,
// as Flux does. The token service is reached through spec.proxySecretRef's
// proxy, not certSecretRef's TLS, also as Flux.
func ociProviderAuth(ctx context.Context, obj *sourcev1.OCIRepository, t *ociTransport) *reconciler.Failure {
	p := obj.Spec.Provider
	if !ociProviders[p] {
		return nil
	}
	if _, static := t.Keychain.(secretopts.Keychain); static {
		return nil
	}
	if obj.Spec.ServiceAccountName != "" {
		// Flux asks for a feature gate here; Eddy has no object-level identity.
		return fetchFailed(meta.FeatureGateDisabledReason, "spec.serviceAccountName with provider '%s' is not supported: "+
			"Eddy implements no object-level workload identity; the controller's own identity is used without it", p).Stall()
	}
	hc, err := cloudauth.HTTPClient(nil, t.Proxy)
	if err == nil {
		var creds cloudauth.Credentials
		creds, err = cloudauth.RegistryCredentials(ctx, p, strings.TrimPrefix(obj.Spec.URL, "oci://"), hc)
		t.Keychain = cloudauth.Keychain(creds)
	}
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get credential from %s: %s", p, err)
	}
	return nil
}
