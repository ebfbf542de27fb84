package sopstest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
)

// AzureKV is a fake Entra ID (the authority at URL: instance and tenant
// discovery, a client-secret token endpoint) and Azure Key Vault (keys at
// URL/keys/<name>/<version>: encrypt and decrypt) on one TLS server, whose
// certificate TrustTLSFakes trusts. Key Vault asks for a token by its
// challenge first, as Azure does.
type AzureKV struct {
	sealer
	URL                            string
	Tenant, ClientID, ClientSecret string
	token                          string
}

// NewAzureKV starts an Azure fake; it stops at close's call.
func NewAzureKV(tenant, clientID, clientSecret string) (*AzureKV, func()) {
	a := &AzureKV{Tenant: tenant, ClientID: clientID, ClientSecret: clientSecret, token: "azure-token-" + clientID}
	s := httptest.NewTLSServer(http.HandlerFunc(a.serve))
	a.URL = s.URL
	return a, s.Close
}

// KeyURL is the URL of the fake's key name (version v1).
func (a *AzureKV) KeyURL(name string) string {
	return a.URL + "/keys/" + name + "/v1"
}

func (a *AzureKV) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	tenantURL := a.URL + "/" + a.Tenant
	switch {
	case r.URL.Path == "/common/discovery/instance":
		_ = json.NewEncoder(w).Encode(map[string]any{"tenant_discovery_endpoint": tenantURL + "/v2.0/.well-known/openid-configuration", "api-version": "1.1",
			"metadata": []any{map[string]any{"preferred_network": strings.TrimPrefix(a.URL, "https://"), "preferred_cache": strings.TrimPrefix(a.URL, "https://"), "aliases": []string{strings.TrimPrefix(a.URL, "https://")}}}})
	case r.URL.Path == "/"+a.Tenant+"/v2.0/.well-known/openid-configuration":
		_ = json.NewEncoder(w).Encode(map[string]any{"token_endpoint": tenantURL + "/oauth2/v2.0/token", "authorization_endpoint": tenantURL + "/oauth2/v2.0/authorize", "issuer": tenantURL + "/v2.0"})
	case r.URL.Path == "/"+a.Tenant+"/oauth2/v2.0/token":
		if r.ParseForm() != nil || r.PostForm.Get("client_id") != a.ClientID || r.PostForm.Get("client_secret") != a.ClientSecret {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": a.token, "token_type": "Bearer", "expires_in": 3600})
	case strings.HasPrefix(r.URL.Path, "/keys/"):
		a.serveKey(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (a *AzureKV) serveKey(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		// The resource is the vault's host less its first label, as
		// Key Vault's challenge names vault.azure.net for
		// <name>.vault.azure.net (127.0.0.1 → 0.0.1).
		host := r.Host[strings.Index(r.Host, ".")+1:]
		w.Header().Set("WWW-Authenticate", `Bearer authorization="`+a.URL+"/"+a.Tenant+`", resource="https://`+host+`"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/keys/"), "/")
	var body struct{ Alg, Value string }
	if len(parts) != 3 || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"code":"BadParameter"}}`, http.StatusBadRequest)
		return
	}
	kid := a.URL + "/keys/" + parts[0] + "/" + parts[1]
	in, err := base64.RawURLEncoding.DecodeString(body.Value)
	if err != nil {
		http.Error(w, `{"error":{"code":"BadParameter"}}`, http.StatusBadRequest)
		return
	}
	var out []byte
	switch parts[2] {
	case "encrypt":
		out = []byte(a.seal(kid+"|", in))
	case "decrypt":
		p, ok := a.open(string(in))
		if !ok || !strings.HasPrefix(string(in), kid+"|") {
			http.Error(w, `{"error":{"code":"BadParameter","message":"decryption failed"}}`, http.StatusBadRequest)
			return
		}
		out = p
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"kid": kid, "value": base64.RawURLEncoding.EncodeToString(out)})
}

// AzureConfig is the fake's service principal as a sops.azure-kv entry.
func (a *AzureKV) AzureConfig() string {
	return "tenantId: " + a.Tenant + "\nclientId: " + a.ClientID + "\nclientSecret: " + a.ClientSecret + "\nauthorityHost: " + a.URL + "\n"
}
