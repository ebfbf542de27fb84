package cloudfake

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// azureTokens issues one deterministic access token per scope (so a test
// can start a server that takes it before it is issued) and remembers
// which scopes it issued.
type azureTokens struct {
	prefix string
	mu     sync.Mutex
	scopes []string
	ttl    time.Duration
}

// SetTTL sets the lifetime of the tokens issued next (default an hour).
func (a *azureTokens) SetTTL(ttl time.Duration) {
	a.mu.Lock()
	a.ttl = ttl
	a.mu.Unlock()
}

// TokenFor is the access token issued for scope.
func (a *azureTokens) TokenFor(scope string) string {
	sum := sha256.Sum256([]byte(a.prefix + "\x00" + scope))
	return a.prefix + "." + hex.EncodeToString(sum[:12])
}

// ScopeOf tells which scope token was issued for.
func (a *azureTokens) ScopeOf(token string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.scopes {
		if a.TokenFor(s) == token {
			return s, true
		}
	}
	return "", false
}

// Issued lists the scopes of the tokens issued, one per token.
func (a *azureTokens) Issued() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.scopes...)
}

func (a *azureTokens) issue(w http.ResponseWriter, scope string, asStrings bool) {
	a.mu.Lock()
	a.scopes = append(a.scopes, scope)
	secs := int(a.ttl.Seconds())
	a.mu.Unlock()
	if secs == 0 {
		secs = 3599
	}
	var ttl any = secs
	if asStrings {
		ttl = fmt.Sprint(secs)
	}
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": ttl, "access_token": a.TokenFor(scope)})
}

// Entra is a fake Entra ID token endpoint for workload identity: it takes
// the client credentials grant with a federated token as assertion, at
// /<tenant>/oauth2/v2.0/token. Point clients at it with
// AZURE_AUTHORITY_HOST set to URL.
type Entra struct {
	azureTokens
	URL                                string
	TenantID, ClientID, FederatedToken string
	srv                                *httptest.Server
	failWith                           int
	requests                           int
}

// StartEntra serves tokens to clientID of tenantID presenting
// federatedToken.
func StartEntra(tenantID, clientID, federatedToken string) *Entra {
	e := &Entra{TenantID: tenantID, ClientID: clientID, FederatedToken: federatedToken}
	e.prefix = "entra-" + randomHex()
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	e.URL = e.srv.URL + "/"
	return e
}

// Close stops the server.
func (e *Entra) Close() { e.srv.Close() }

// FailWith makes every later token request fail with code (0: succeed
// again), with Entra's error body, whose description changes each time.
func (e *Entra) FailWith(code int) {
	e.mu.Lock()
	e.failWith = code
	e.mu.Unlock()
}

// Requests counts the token requests received, failed ones included.
func (e *Entra) Requests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests
}

func (e *Entra) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.requests++
	fail := e.failWith
	e.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/"+e.TenantID+"/oauth2/v2.0/token" {
		entraError(w, http.StatusBadRequest, "invalid_request", 900023, "Specified tenant identifier is neither a valid DNS name, nor a valid external domain.")
		return
	}
	_ = r.ParseForm()
	f := r.PostForm
	switch {
	case fail != 0:
		entraError(w, fail, "invalid_client", 700016, "Application with identifier was not found in the directory.")
	case f.Get("grant_type") != "client_credentials" || f.Get("scope") == "" ||
		f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
		entraError(w, http.StatusBadRequest, "invalid_request", 90014, "A required field is missing.")
	case f.Get("client_id") != e.ClientID:
		entraError(w, http.StatusBadRequest, "unauthorized_client", 700016, "Application with identifier was not found in the directory.")
	case f.Get("client_assertion") != e.FederatedToken:
		entraError(w, http.StatusBadRequest, "invalid_client", 700211, "No matching federated identity record found for presented assertion issuer.")
	default:
		e.issue(w, f.Get("scope"), false)
	}
}

// entraError writes Entra ID's error answer, with a new trace ID and time.
func entraError(w http.ResponseWriter, code int, kind string, aadsts int, desc string) {
	trace := randomHex()
	now := time.Now().UTC().Format("2006-01-02 15:04:05Z")
	writeJSON(w, code, map[string]any{"error": kind, "error_codes": []int{aadsts}, "trace_id": trace, "timestamp": now,
		"error_description": fmt.Sprintf("AADSTS%d: %s Trace ID: %s Timestamp: %s", aadsts, desc, trace, now)})
}

// IMDS is a fake Azure instance metadata service issuing the managed
// identity's tokens. Point clients at it with
// AZURE_POD_IDENTITY_AUTHORITY_HOST set to URL.
type IMDS struct {
	azureTokens
	URL string
	// ClientID, when set, is the user-assigned identity's client ID
	// requests must name.
	ClientID string
	srv      *httptest.Server
}

// StartIMDS serves the managed identity's tokens.
func StartIMDS(clientID string) *IMDS {
	m := &IMDS{ClientID: clientID}
	m.prefix = "imds-" + randomHex()
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.URL = m.srv.URL
	return m
}

// Close stops the server.
func (m *IMDS) Close() { m.srv.Close() }

func (m *IMDS) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.Header.Get("Metadata") != "true":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "Required metadata header not specified"})
	case r.URL.Path != "/metadata/identity/oauth2/token" || q.Get("api-version") == "":
		http.NotFound(w, r)
	case q.Get("resource") == "" || q.Get("client_id") != m.ClientID:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "Identity not found"})
	default:
		// Its resource names the scope `<resource>/.default`.
		m.issue(w, q.Get("resource")+"/.default", true)
	}
}

// ACR is a fake Azure Container Registry front over TLS at Addr, with
// the certificate of TLSCertificate (valid for `*.azurecr.io` and the
// national clouds' domains). Its token exchange (POST /oauth2/exchange)
// takes an Entra ID access token that accept knows for ACRScope and
// answers with a new refresh token, a JWT valid for its TTL; other requests
// need basic auth as ACRUser with an unexpired refresh token and then go
// to next (the registry behind).
type ACR struct {
	Addr   string
	ttl    time.Duration
	srv    *httptest.Server
	accept func(token string) (scope string, ok bool)
	next   http.Handler

	mu        sync.Mutex
	exchanges []string
	refresh   map[string]time.Time
}

// ACRScope is the Entra ID scope of Azure's public cloud registries.
const ACRScope = "https://containerregistry.azure.net/.default"

// ACRUser is the user of ACR's refresh tokens.
const ACRUser = "00000000-0000-0000-0000-000000000000"

// StartACR exchanges the tokens accept knows for ACRScope for refresh
// tokens valid for ttl and serves next to their bearers.
func StartACR(accept func(string) (string, bool), next http.Handler, ttl time.Duration) *ACR {
	a := &ACR{accept: accept, next: next, ttl: ttl, refresh: map[string]time.Time{}}
	a.srv = httptest.NewUnstartedServer(a)
	a.srv.TLS = &tls.Config{Certificates: []tls.Certificate{TLSCertificate()}, MinVersion: tls.VersionTLS12}
	a.srv.StartTLS()
	a.Addr = a.srv.Listener.Addr().String()
	return a
}

// Close stops the server.
func (a *ACR) Close() { a.srv.Close() }

// SetTTL sets the lifetime of the refresh tokens issued next.
func (a *ACR) SetTTL(ttl time.Duration) {
	a.mu.Lock()
	a.ttl = ttl
	a.mu.Unlock()
}

// Exchanges lists the service (registry host) of each successful exchange.
func (a *ACR) Exchanges() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.exchanges...)
}

// RefreshTokens lists the refresh tokens issued.
func (a *ACR) RefreshTokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for t := range a.refresh {
		out = append(out, t)
	}
	return out
}

func (a *ACR) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth2/exchange" {
		a.exchange(w, r)
		return
	}
	user, pass, _ := r.BasicAuth()
	a.mu.Lock()
	exp, ok := a.refresh[pass]
	a.mu.Unlock()
	if user != ACRUser || !ok || time.Now().After(exp) || a.next == nil {
		host, _, _ := strings.Cut(r.Host, ":")
		w.Header().Set("WWW-Authenticate", `Basic realm="https://`+host+`/oauth2/token"`)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": "authentication required"}}})
		return
	}
	a.next.ServeHTTP(w, r)
}

func (a *ACR) exchange(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := r.PostForm
	scope, ok := a.accept(f.Get("access_token"))
	host, _, _ := strings.Cut(r.Host, ":")
	switch {
	case r.Method != http.MethodPost || f.Get("grant_type") != "access_token":
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]string{{"code": "UNSUPPORTED", "message": "grant type"}}})
	case !ok || scope != ACRScope:
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": "invalid access token"}}})
	case f.Get("service") != host:
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]string{{"code": "UNSUPPORTED", "message": "service"}}})
	default:
		a.mu.Lock()
		exp := time.Now().Add(a.ttl)
		a.mu.Unlock()
		claims, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "grant_type": "refresh_token", "jti": randomHex()})
		enc := base64.RawURLEncoding.EncodeToString
		tok := enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(claims) + "." + enc([]byte("fake-signature"))
		a.mu.Lock()
		a.exchanges = append(a.exchanges, host)
		a.refresh[tok] = exp
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"refresh_token": tok})
	}
}
