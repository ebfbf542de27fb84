package cloudauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// acrPattern is Azure Container Registry's hosts, as Flux matches them.
const acrPattern = `^.+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)$`

var acrRegex = regexp.MustCompile(acrPattern)

const (
	// ACRUser is the user of ACR's basic auth with a refresh token as
	// password (`az acr login --expose-token`).
	ACRUser = "00000000-0000-0000-0000-000000000000"
	// ScopeAzureDevOps is Azure DevOps' resource, whose access token is a
	// bearer credential for Azure Repos.
	ScopeAzureDevOps = "499b84ac-1321-427f-aa17-267ca6975798/.default"
	// imdsDefault is the Azure instance metadata service's base URL;
	// AZURE_POD_IDENTITY_AUTHORITY_HOST replaces it, as in Azure's SDKs.
	imdsDefault = "http://169.254.169.254"
	// maxTokenAnswer bounds what is read of a token service's answer.
	maxTokenAnswer = 1 << 20
)

// The environment of Azure workload identity, as AKS's webhook injects it.
const (
	envAzureClientID      = "AZURE_CLIENT_ID"
	envAzureTenantID      = "AZURE_TENANT_ID"
	envAzureTokenFile     = "AZURE_FEDERATED_TOKEN_FILE"
	envAzureAuthorityHost = "AZURE_AUTHORITY_HOST"
	envAzureIMDSHost      = "AZURE_POD_IDENTITY_AUTHORITY_HOST"
)

// acrScope is the Entra ID scope of a registry's token exchange: each
// national cloud has its own audience.
func acrScope(host string) string {
	switch {
	case strings.HasSuffix(host, ".azurecr.cn"):
		return "https://management.chinacloudapi.cn/.default"
	case strings.HasSuffix(host, ".azurecr.us"):
		return "https://management.usgovcloudapi.net/.default"
	default:
		return "https://containerregistry.azure.net/.default"
	}
}

// azureIdentity is the controller's own Azure identity: workload
// identity when its four variables are set, else the managed identity
// of the instance metadata service (AZURE_CLIENT_ID picking a
// user-assigned one). Flux's chain without shelling out starts with
// client secrets and certificates in the environment; Eddy reads neither.
type azureIdentity struct {
	clientID, tenantID, tokenFile, authority string
}

func azureIdentityFromEnv() azureIdentity {
	id := azureIdentity{clientID: os.Getenv(envAzureClientID)}
	tenant, file, authority := os.Getenv(envAzureTenantID), os.Getenv(envAzureTokenFile), os.Getenv(envAzureAuthorityHost)
	if id.clientID != "" && tenant != "" && file != "" && authority != "" {
		id.tenantID, id.tokenFile, id.authority = tenant, file, authority
	}
	return id
}

func (id azureIdentity) workload() bool { return id.tokenFile != "" }

// key is what a token of this identity depends on, for the cache.
func (id azureIdentity) key() []string {
	return []string{id.clientID, id.tenantID, id.tokenFile, id.authority, os.Getenv(envAzureIMDSHost)}
}

// AzureToken returns an Entra ID access token of the controller's identity
// for scope, from the cache while it is fresh, as bearer credentials.
// Requests to Entra ID go through hc (its proxy); the instance metadata
// service is local to the node and never reached through a proxy.
func AzureToken(ctx context.Context, scope string, hc *http.Client) (Credentials, error) {
	id := azureIdentityFromEnv()
	key := cacheKey(append([]string{ProviderAzure, "token", scope}, id.key()...)...)
	return cache.getOrNew(ctx, key, func(ctx context.Context) (Credentials, error) {
		if id.workload() {
			return id.federatedToken(ctx, scope, hc)
		}
		return id.managedIdentityToken(ctx, scope, hc)
	})
}

// AzureClientSecretToken asks Entra ID at authority (`https://host/`) for
// a token of scope for the service principal clientID of tenantID with its
// client secret (OAuth 2.0 client credentials). Not cached: the caller
// keeps the token. Errors as AzureToken's, secret-free.
func AzureClientSecretToken(ctx context.Context, authority, tenantID, clientID, secret, scope string, hc *http.Client) (Credentials, error) {
	u := strings.TrimSuffix(authority, "/") + "/" + url.PathEscape(tenantID) + "/oauth2/v2.0/token"
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return Credentials{}, fmt.Errorf("ClientSecretCredential: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return azureTokenAnswer(hc, req, "ClientSecretCredential")
}

// AzureDevOpsCredentials returns the bearer token of Azure DevOps' scope,
// for Git over HTTPS, with Flux's message on failure.
func AzureDevOpsCredentials(ctx context.Context, hc *http.Client) (Credentials, error) {
	c, err := AzureToken(ctx, ScopeAzureDevOps, hc)
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to get access token for Git repository: %w", err)
	}
	return c, nil
}

// federatedToken trades the projected service account token for an
// access token (OAuth 2.0 client credentials with a JWT assertion). The
// file is read at each call: kubelet rotates it.
func (id azureIdentity) federatedToken(ctx context.Context, scope string, hc *http.Client) (Credentials, error) {
	const who = "WorkloadIdentityCredential"
	assertion, err := os.ReadFile(id.tokenFile)
	if err != nil {
		return Credentials{}, fmt.Errorf("%s: failed to read the federated token file: %w", who, err)
	}
	u := strings.TrimSuffix(id.authority, "/") + "/" + url.PathEscape(id.tenantID) + "/oauth2/v2.0/token"
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id.clientID}, "scope": {scope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {strings.TrimSpace(string(assertion))}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return Credentials{}, fmt.Errorf("%s: %w", who, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return azureTokenAnswer(hc, req, who)
}

// managedIdentityToken asks the instance metadata service for the
// managed identity's token of scope's resource.
func (id azureIdentity) managedIdentityToken(ctx context.Context, scope string, hc *http.Client) (Credentials, error) {
	const who = "ManagedIdentityCredential"
	base := os.Getenv(envAzureIMDSHost)
	if base == "" {
		base = imdsDefault
	}
	q := url.Values{"api-version": {"2018-02-01"}, "resource": {strings.TrimSuffix(scope, "/.default")}}
	if id.clientID != "" {
		q.Set("client_id", id.clientID)
	}
	u := strings.TrimSuffix(base, "/") + "/metadata/identity/oauth2/token?" + q.Encode()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Credentials{}, fmt.Errorf("%s: %w", who, err)
	}
	req.Header.Set("Metadata", "true")
	return azureTokenAnswer(withoutProxy(hc), req, who)
}

// withoutProxy is hc without its proxy, for node-local services.
func withoutProxy(hc *http.Client) *http.Client {
	c := *hc
	if t, ok := hc.Transport.(*http.Transport); ok {
		t = t.Clone()
		t.Proxy = nil
		c.Transport = t
	}
	return &c
}

// azureTokenAnswer sends req and reads an OAuth token answer (Entra ID's
// and IMDS's share it; IMDS writes numbers as strings). Errors name the
// request and the service's error code, never its description: that
// carries trace IDs and times, which would change the message at each
// attempt.
func azureTokenAnswer(hc *http.Client, req *http.Request, who string) (Credentials, error) {
	where := req.Method + " " + req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Credentials{}, fmt.Errorf("%s authentication failed: %s: %w", who, where, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	var tok struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
		Error       string          `json:"error"`
		ErrorCodes  []int64         `json:"error_codes"`
	}
	jsonErr := json.Unmarshal(body, &tok)
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("%s authentication failed: %s: %s", who, where, resp.Status)
		if jsonErr == nil && tok.Error != "" && len(tok.Error) < 100 {
			msg += ": " + tok.Error
			if len(tok.ErrorCodes) > 0 {
				msg += fmt.Sprintf(" (AADSTS%d)", tok.ErrorCodes[0])
			}
		}
		return Credentials{}, errors.New(msg)
	}
	secs, err := strconv.ParseInt(strings.Trim(string(tok.ExpiresIn), `"`), 10, 64)
	if jsonErr != nil || tok.AccessToken == "" || err != nil {
		return Credentials{}, fmt.Errorf("%s authentication failed: %s: the answer has no access token and lifetime", who, where)
	}
	return Credentials{Password: tok.AccessToken, ExpiresAt: time.Now().Add(time.Duration(secs) * time.Second)}, nil
}
