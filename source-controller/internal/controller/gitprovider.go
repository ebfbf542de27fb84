package controller

import (
	"context"
	"net/url"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

const githubAppDataRequired = "secretRef with github app data must be specified when provider is set to github"

// checkGitProvider refuses (stalls on) a spec.provider Eddy does not
// build, and provider github without spec.secretRef, as Flux does.
func checkGitProvider(obj *sourcev1.GitRepository) *reconciler.Failure {
	switch p := obj.Spec.Provider; p {
	case "", sourcev1.GitProviderGeneric:
	case sourcev1.GitProviderGitHub:
		if obj.Spec.SecretRef == nil {
			return fetchFailed(sourcev1.InvalidProviderConfigReason, githubAppDataRequired).Stall()
		}
	case sourcev1.GitProviderAzure:
		if obj.Spec.ServiceAccountName != "" {
			// Flux asks for a feature gate here; Eddy has no object-level identity.
			return fetchFailed(meta.FeatureGateDisabledReason, "spec.serviceAccountName with provider '%s' is not supported: "+
				"Eddy implements no object-level workload identity; the controller's own identity is used without it", p).Stall()
		}
	default:
		return fetchFailed(sourcev1.InvalidProviderConfigReason, "provider '%s' is not supported: use 'generic' with spec.secretRef", obj.Spec.Provider).Stall()
	}
	return nil
}

// providerAuth replaces auth's credentials by those spec.provider gets
// from its token service: for github, an installation token of the GitHub
// App in spec.secretRef (data), asked over the Secret's CA and the
// proxy of spec.proxySecretRef; for azure, the controller's Entra ID
// token for Azure DevOps as a bearer token, asked through that proxy.
// Tokens are cached (package cloudauth).
func providerAuth(ctx context.Context, obj *sourcev1.GitRepository, data map[string][]byte, auth *gitAuth) *reconciler.Failure {
	switch obj.Spec.Provider {
	case sourcev1.GitProviderAzure:
		if !strings.HasPrefix(obj.Spec.URL, "http") {
			return nil // a bearer token is for HTTP(S); SSH keeps its key
		}
		return azureDevOpsAuth(ctx, auth)
	case sourcev1.GitProviderGitHub:
	default:
		return nil
	}
	if !cloudauth.HasGitHubAppData(data) {
		return fetchFailed(sourcev1.InvalidProviderConfigReason, githubAppDataRequired)
	}
	app, err := cloudauth.GitHubAppFromSecret(data)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	hc, err := cloudauth.HTTPClient(auth.CABundle, gitProxyURL(auth))
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	creds, err := app.Credentials(ctx, hc)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	auth.Method = &githttp.BasicAuth{Username: creds.Username, Password: creds.Password}
	return nil
}

// azureDevOpsAuth puts the controller's Azure DevOps token in auth, as
// Flux does with provider azure (whatever spec.secretRef holds).
func azureDevOpsAuth(ctx context.Context, auth *gitAuth) *reconciler.Failure {
	hc, err := cloudauth.HTTPClient(nil, gitProxyURL(auth))
	if err == nil {
		var creds cloudauth.Credentials
		if creds, err = cloudauth.AzureDevOpsCredentials(ctx, hc); err == nil {
			auth.Method = &githttp.TokenAuth{Token: creds.Password}
		}
	}
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	return nil
}

// gitProxyURL is spec.proxySecretRef's proxy with its credentials; nil
// without one (the environment's proxy then applies).
func gitProxyURL(auth *gitAuth) *url.URL {
	if auth.Proxy.URL == "" {
		return nil
	}
	u, err := url.Parse(auth.Proxy.URL)
	if err != nil {
		return nil
	}
	if auth.Proxy.Username != "" {
		u.User = url.UserPassword(auth.Proxy.Username, auth.Proxy.Password)
	}
	return u
}
