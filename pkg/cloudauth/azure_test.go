package cloudauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
)

// isolateAzure leaves only the Azure environment the test sets.
func isolateAzure(t *testing.T) {
	t.Helper()
	cache.forget()
	for _, k := range []string{envAzureClientID, envAzureTenantID, envAzureTokenFile, envAzureAuthorityHost, envAzureIMDSHost} {
		t.Setenv(k, "")
	}
}

// workloadIdentity sets the environment AKS's webhook injects, pointing
// at entra.
func workloadIdentity(t *testing.T, entra *cloudfake.Entra) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(file, []byte(entra.FederatedToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envAzureClientID, entra.ClientID)
	t.Setenv(envAzureTenantID, entra.TenantID)
	t.Setenv(envAzureTokenFile, file)
	t.Setenv(envAzureAuthorityHost, entra.URL)
}

// acrClient reaches acr for every HTTPS host and trusts the fakes'
// certificate; plain HTTP goes through proxy when set.
func acrClient(acr *cloudfake.ACR, proxy *url.URL) *http.Client {
	pool := x509.NewCertPool()
	c, _ := x509.ParseCertificate(cloudfake.TLSCertificate().Certificate[0])
	pool.AddCert(c)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	t.DialTLSContext = nil
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasSuffix(addr, ":443") {
			addr = acr.Addr
		}
		return dial(ctx, network, addr)
	}
	if proxy != nil {
		t.Proxy = func(r *http.Request) (*url.URL, error) {
			if r.URL.Scheme == "https" {
				return nil, nil
			}
			return proxy, nil
		}
	}
	return &http.Client{Transport: t}
}

func TestACRWithWorkloadIdentityExchangesTheEntraTokenOnce(t *testing.T) {
	isolateAzure(t)
	entra := cloudfake.StartEntra("tenant-1", "client-1", "projected-sa-token")
	defer entra.Close()
	acr := cloudfake.StartACR(entra.ScopeOf, nil, 3*time.Hour)
	defer acr.Close()
	workloadIdentity(t, entra)
	var proxied atomic.Int32
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		proxied.Add(1)
		pr.Out.URL = pr.In.URL
	}})
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	hc := acrClient(acr, pu)
	for _, repo := range []string{"myreg.azurecr.io/apps/podinfo", "myreg.azurecr.io/other"} {
		c, err := RegistryCredentials(context.Background(), ProviderAzure, repo, hc)
		if err != nil {
			t.Fatal(err)
		}
		if toks := acr.RefreshTokens(); c.Username != ACRUser || len(toks) != 1 || c.Password != toks[0] || time.Until(c.ExpiresAt) < 2*time.Hour {
			t.Fatalf("credentials %q/%q until %v, want ACR's refresh token for %s", c.Username, c.Password, c.ExpiresAt, ACRUser)
		}
	}
	if got := entra.Issued(); len(got) != 1 || got[0] != cloudfake.ACRScope {
		t.Errorf("Entra ID issued tokens for %v, want one for ACR's scope", got)
	}
	if ACRUser != cloudfake.ACRUser {
		t.Errorf("user %s, the fake takes %s", ACRUser, cloudfake.ACRUser)
	}
	if got := acr.Exchanges(); len(got) != 1 || got[0] != "myreg.azurecr.io" {
		t.Errorf("exchanges %v, want one for the registry", got)
	}
	if proxied.Load() != 1 {
		t.Errorf("%d requests through the proxy, want Entra ID's one", proxied.Load())
	}
}

func TestAzureDevOpsTokenFromIMDSSkipsTheProxy(t *testing.T) {
	isolateAzure(t)
	imds := cloudfake.StartIMDS("user-assigned-id")
	defer imds.Close()
	t.Setenv(envAzureIMDSHost, imds.URL)
	// A client ID alone is no workload identity: it picks the managed identity.
	t.Setenv(envAzureClientID, "user-assigned-id")
	dead, _ := url.Parse("http://127.0.0.1:1")
	hc, err := HTTPClient(nil, dead)
	if err != nil {
		t.Fatal(err)
	}
	c, err := AzureDevOpsCredentials(context.Background(), hc)
	if err != nil {
		t.Fatal(err)
	}
	if c.Username != "" || c.Password != imds.TokenFor(ScopeAzureDevOps) || time.Until(c.ExpiresAt) < 50*time.Minute {
		t.Errorf("credentials %q/%q until %v, want the bearer token of Azure DevOps' scope", c.Username, c.Password, c.ExpiresAt)
	}
	if _, err := AzureDevOpsCredentials(context.Background(), hc); err != nil || len(imds.Issued()) != 1 {
		t.Errorf("second call: %v, %d tokens issued; want the cached one", err, len(imds.Issued()))
	}
}

func TestAzureFailuresAreStableAndSecretFree(t *testing.T) {
	isolateAzure(t)
	entra := cloudfake.StartEntra("tenant-1", "client-1", "projected-sa-token")
	defer entra.Close()
	acr := cloudfake.StartACR(func(string) (string, bool) { return "", false }, nil, time.Hour)
	defer acr.Close()
	workloadIdentity(t, entra)
	hc := acrClient(acr, nil)
	ctx := context.Background()
	_, err := RegistryCredentials(ctx, ProviderAzure, "ghcr.io/org/app", hc)
	if err == nil || err.Error() != `invalid Azure registry: 'ghcr.io'. must match `+acrPattern {
		t.Errorf("error %v, want Flux's invalid Azure registry", err)
	}
	_, err = RegistryCredentials(ctx, ProviderAzure, "myreg.azurecr.io/app", hc)
	want := "failed to create artifact registry credentials: POST https://myreg.azurecr.io/oauth2/exchange: 401 Unauthorized"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	entra.FailWith(http.StatusUnauthorized)
	cache.forget()
	want = "failed to get access token for artifact registry: WorkloadIdentityCredential authentication failed: POST " +
		entra.URL + "tenant-1/oauth2/v2.0/token: 401 Unauthorized: invalid_client (AADSTS700016)"
	for range 2 {
		_, err = RegistryCredentials(ctx, ProviderAzure, "myreg.azurecr.io/app", hc)
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want the same %q at each attempt", err, want)
		}
	}
	if entra.Requests() != 3 {
		t.Errorf("%d token requests, want 3: failures are not cached", entra.Requests())
	}
	t.Setenv(envAzureIMDSHost, "http://127.0.0.1:1")
	t.Setenv(envAzureTokenFile, "")
	_, err = AzureDevOpsCredentials(ctx, hc)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to get access token for Git repository: ManagedIdentityCredential authentication failed: GET http://127.0.0.1:1/metadata/identity/oauth2/token: ") {
		t.Errorf("error %v, want the managed identity's failure", err)
	}
}

func TestACRScopeFollowsTheNationalCloudAndRefreshTokensNeedAnExpiry(t *testing.T) {
	for host, want := range map[string]string{"a.azurecr.io": cloudfake.ACRScope, "a.azurecr.de": cloudfake.ACRScope,
		"a.azurecr.cn": "https://management.chinacloudapi.cn/.default", "a.azurecr.us": "https://management.usgovcloudapi.net/.default"} {
		if got := acrScope(host); got != want {
			t.Errorf("%s: scope %s, want %s", host, got, want)
		}
	}
	for _, tok := range []string{"opaque", "a.!!.c", "a.e30.c"} {
		if _, err := jwtExpiry(tok); err == nil {
			t.Errorf("%q: an expiry", tok)
		}
	}
}
