package testenv

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// AzureBlob is an Azure Blob Storage account in the test process (List
// Blobs and Get Blob, in memory) with path-style URLs as Azurite's,
// `http://127.0.0.1:<port>/<account>`. It takes a request signed with its
// Shared Key (the signature checked), carrying a SAS token it issued, or
// with a bearer token its Entra ID issued to its service principal; an
// anonymous request only on a container made public. It answers errors
// as Azure does (status, x-ms-error-code, XML body).
type AzureBlob struct {
	srv *httptest.Server
	// Account and Key are the account name and its Shared Key (base64).
	Account, Key string
	// TenantID, ClientID and ClientSecret are the service principal its
	// Entra ID (at AuthorityHost) issues tokens to.
	TenantID, ClientID, ClientSecret string
	// PageSize bounds the blobs of a List Blobs page.
	PageSize int

	mu         sync.Mutex
	containers map[string]map[string]azureBlob
	public     map[string]bool
	sas        map[string]bool // signatures of issued SAS tokens
	tokens     map[string]bool // bearer tokens issued
	etags      int
}

type azureBlob struct {
	data []byte
	etag string
}

// NewAzureBlob starts an empty account and closes it by t.Cleanup.
func NewAzureBlob(t testing.TB) *AzureBlob {
	t.Helper()
	a := &AzureBlob{Account: "eddyaccount", Key: base64.StdEncoding.EncodeToString(randomBytes(t, 32)),
		TenantID: "eddy-tenant", ClientID: "eddy-client", ClientSecret: "eddy-client-secret", PageSize: 2,
		containers: map[string]map[string]azureBlob{}, public: map[string]bool{}, sas: map[string]bool{}, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /"+a.TenantID+"/oauth2/v2.0/token", a.token)
	mux.HandleFunc("GET /"+a.Account+"/{container}", a.list)
	mux.HandleFunc("GET /"+a.Account+"/{container}/{blob...}", a.get)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// Endpoint is the account URL (a Bucket's spec.endpoint).
func (a *AzureBlob) Endpoint() string { return a.srv.URL + "/" + a.Account }

// AuthorityHost is its Entra ID (a Secret's authorityHost).
func (a *AzureBlob) AuthorityHost() string { return a.srv.URL + "/" }

// CreateContainer makes the container name; public ones take anonymous reads.
func (a *AzureBlob) CreateContainer(name string, public bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.containers[name] = map[string]azureBlob{}
	a.public[name] = public
}

// Put writes the blob key of container and returns its etag as Get Blob's
// ETag header gives it (quoted).
func (a *AzureBlob) Put(container, key, content string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.etags++
	etag := fmt.Sprintf(`"0x8DD%013X"`, a.etags)
	a.containers[container][key] = azureBlob{data: []byte(content), etag: etag}
	return etag
}

// Delete removes the blob key of container.
func (a *AzureBlob) Delete(container, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.containers[container], key)
}

// SAS issues a read and list SAS token (a Secret's sasKey).
func (a *AzureBlob) SAS(t testing.TB) string {
	sig := base64.StdEncoding.EncodeToString(randomBytes(t, 32))
	a.mu.Lock()
	a.sas[sig] = true
	a.mu.Unlock()
	return "?" + url.Values{"sv": {"2021-08-06"}, "sr": {"c"}, "sp": {"rl"}, "se": {"2099-01-01T00:00:00Z"}, "sig": {sig}}.Encode()
}

// azureFail answers an Azure error.
func azureFail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s
RequestId:%s
Time:2026-01-01T00:00:00.0000000Z</Message></Error>`, code, msg, hex.EncodeToString([]byte(code))[:8])
}

// token is Entra ID's client credentials grant for the service principal.
func (a *AzureBlob) token(w http.ResponseWriter, r *http.Request) {
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_id") != a.ClientID ||
		r.PostForm.Get("client_secret") != a.ClientSecret || r.PostForm.Get("scope") != "https://storage.azure.com/.default" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`)
		return
	}
	a.mu.Lock()
	tok := fmt.Sprintf("entra-token-%d", len(a.tokens)+1)
	a.tokens[tok] = true
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token_type":"Bearer","expires_in":3599,"access_token":%q}`, tok)
}

// authorized checks r's credentials for container, answering the error
// when they fail.
func (a *AzureBlob) authorized(w http.ResponseWriter, r *http.Request, container string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch {
	case strings.HasPrefix(auth, "SharedKey "):
		if auth != "SharedKey "+a.Account+":"+a.sharedKey(r) {
			azureFail(w, http.StatusForbidden, "AuthenticationFailed", "Server failed to authenticate the request. "+
				"Make sure the value of Authorization header is formed correctly including the signature.")
			return false
		}
	case strings.HasPrefix(auth, "Bearer "):
		if !a.tokens[strings.TrimPrefix(auth, "Bearer ")] || r.Header.Get("x-ms-version") < "2017-11-09" {
			azureFail(w, http.StatusUnauthorized, "InvalidAuthenticationInfo", "Authentication information is not given in the correct format.")
			return false
		}
	case r.URL.Query().Has("sig"):
		q := r.URL.Query()
		if !a.sas[q.Get("sig")] || !strings.Contains(q.Get("sp"), "r") || !strings.Contains(q.Get("sp"), "l") {
			azureFail(w, http.StatusForbidden, "AuthenticationFailed", "Server failed to authenticate the request. "+
				"Make sure the value of Authorization header is formed correctly including the signature.")
			return false
		}
	case !a.public[container]:
		azureFail(w, http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
		return false
	}
	return true
}

// sharedKey is the Shared Key signature of r, computed from what the
// server received.
func (a *AzureBlob) sharedKey(r *http.Request) string {
	key, _ := base64.StdEncoding.DecodeString(a.Key)
	lines := []string{r.Method}
	for _, h := range []string{"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
		"If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"} {
		v := r.Header.Get(h)
		if h == "Content-Length" && v == "0" {
			v = ""
		}
		lines = append(lines, v)
	}
	var ms []string
	for k, v := range r.Header {
		if k = strings.ToLower(k); strings.HasPrefix(k, "x-ms-") {
			ms = append(ms, k+":"+strings.TrimSpace(strings.Join(v, ",")))
		}
	}
	sort.Strings(ms)
	lines = append(lines, ms...)
	res := "/" + a.Account + r.URL.EscapedPath()
	q := r.URL.Query()
	var params []string
	for k, v := range q {
		sort.Strings(v)
		params = append(params, strings.ToLower(k)+":"+strings.Join(v, ","))
	}
	sort.Strings(params)
	lines = append(lines, strings.Join(append([]string{res}, params...), "\n"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(strings.Join(lines, "\n")))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// list is List Blobs, flat, with prefix and paging.
func (a *AzureBlob) list(w http.ResponseWriter, r *http.Request) {
	c := r.PathValue("container")
	q := r.URL.Query()
	if q.Get("restype") != "container" || q.Get("comp") != "list" {
		azureFail(w, http.StatusBadRequest, "InvalidQueryParameterValue", "Value for one of the query parameters specified in the request URI is invalid.")
		return
	}
	if !a.authorized(w, r, c) {
		return
	}
	a.mu.Lock()
	blobs, ok := a.containers[c]
	var names []string
	for k := range blobs {
		if strings.HasPrefix(k, q.Get("prefix")) && k > q.Get("marker") {
			names = append(names, k)
		}
	}
	a.mu.Unlock()
	if !ok {
		azureFail(w, http.StatusNotFound, "ContainerNotFound", "The specified container does not exist.")
		return
	}
	sort.Strings(names)
	size := a.PageSize
	if n, err := strconv.Atoi(q.Get("maxresults")); err == nil && n < size {
		size = n
	}
	next := ""
	if len(names) > size {
		names, next = names[:size], names[size-1]
	}
	type props struct {
		Etag string `xml:"Etag"`
	}
	type blob struct {
		Name       string `xml:"Name"`
		Properties props  `xml:"Properties"`
	}
	out := struct {
		XMLName    xml.Name `xml:"EnumerationResults"`
		Blobs      []blob   `xml:"Blobs>Blob"`
		NextMarker string   `xml:"NextMarker"`
	}{NextMarker: next}
	a.mu.Lock()
	for _, n := range names {
		// The listing's etags are unquoted, as Azure's.
		out.Blobs = append(out.Blobs, blob{Name: n, Properties: props{Etag: strings.Trim(blobs[n].etag, `"`)}})
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprint(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(out)
}

// get is Get Blob.
func (a *AzureBlob) get(w http.ResponseWriter, r *http.Request) {
	c, key := r.PathValue("container"), r.PathValue("blob")
	if !a.authorized(w, r, c) {
		return
	}
	a.mu.Lock()
	blobs, ok := a.containers[c]
	b, found := blobs[key]
	a.mu.Unlock()
	switch {
	case !ok:
		azureFail(w, http.StatusNotFound, "ContainerNotFound", "The specified container does not exist.")
	case !found:
		azureFail(w, http.StatusNotFound, "BlobNotFound", "The specified blob does not exist.")
	default:
		w.Header().Set("ETag", b.etag)
		w.Header().Set("Content-Length", strconv.Itoa(len(b.data)))
		_, _ = w.Write(b.data)
	}
}
