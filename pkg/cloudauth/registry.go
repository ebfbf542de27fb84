package cloudauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Registry providers, as spec.provider names them.
const (
	ProviderAWS   = "aws"
	ProviderAzure = "azure"
	ProviderGCP   = "gcp"
)

// RegistryHost returns the registry of an artifact repository
// (`host[:port]/path`, no scheme), as Flux reads it. A host that a URL
// would read differently (`a.example?.azurecr.io` is host a.example) is
// refused: the provider checks match the host, and the token goes to it.
func RegistryHost(repository string) (string, error) {
	reg := strings.TrimSuffix(repository, "/")
	if strings.ContainsRune(reg, '/') {
		ref, err := name.ParseReference(reg)
		if err != nil {
			return "", fmt.Errorf("failed to parse artifact repository '%s': %w", repository, err)
		}
		reg = ref.Context().RegistryStr()
	}
	if u, err := url.Parse("//" + reg); err != nil || u.Host != reg || u.User != nil || u.Path != "" || reg == "" {
		return "", fmt.Errorf("failed to parse artifact repository '%s': invalid registry host", repository)
	}
	return reg, nil
}

// RegistryCredentials returns provider's credentials for the registry of
// repository, from the cache while they are fresh; hc carries the calls to
// the token services. A registry that is not the provider's is refused
// with Flux's message.
func RegistryCredentials(ctx context.Context, provider, repository string, hc *http.Client) (Credentials, error) {
	host, err := RegistryHost(repository)
	if err != nil {
		return Credentials{}, err
	}
	switch provider {
	case ProviderAWS:
		region, err := ParseECRHost(host)
		if err != nil {
			return Credentials{}, err
		}
		return cache.getOrNew(ctx, cacheKey(provider, host), func(ctx context.Context) (Credentials, error) {
			return ecrCredentials(ctx, region, hc)
		})
	case ProviderGCP:
		if !gcpRegex.MatchString(host) {
			return Credentials{}, fmt.Errorf("invalid GCP registry: '%s'. must match %s", host, gcpPattern)
		}
		// One token serves every Google registry, as in Flux.
		return cache.getOrNew(ctx, cacheKey(provider, os.Getenv("GCE_METADATA_HOST")), func(ctx context.Context) (Credentials, error) {
			return gcpCredentials(ctx, hc)
		})
	case ProviderAzure:
		if !acrRegex.MatchString(host) {
			return Credentials{}, fmt.Errorf("invalid Azure registry: '%s'. must match %s", host, acrPattern)
		}
		return cache.getOrNew(ctx, cacheKey(append([]string{provider, host}, azureIdentityFromEnv().key()...)...),
			func(ctx context.Context) (Credentials, error) { return acrCredentials(ctx, host, hc) })
	default:
		return Credentials{}, fmt.Errorf("provider '%s' is not supported by Eddy", provider)
	}
}

// Keychain answers every registry with creds.
type Keychain Credentials

// Resolve implements authn.Keychain.
func (k Keychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return authn.FromConfig(authn.AuthConfig{Username: k.Username, Password: k.Password}), nil
}
