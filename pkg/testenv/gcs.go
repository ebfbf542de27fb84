package testenv

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// GCS is a Google Cloud Storage server in the test process
// (fake-gcs-server's JSON API, in memory) that takes only the bearer tokens
// it knows: those its OAuth2 token endpoint issues for its service
// account's signed JWTs (ServiceAccountKey), and those named by Allow (the
// metadata server's). A request with another token is refused as GCS does
// (401), a bucket Denied with 403. Point a controller at it with
// STORAGE_EMULATOR_HOST set to Host.
type GCS struct {
	srv  *httptest.Server
	fake *fakestorage.Server
	key  *rsa.PrivateKey
	// Email is the service account's.
	Email string

	mu     sync.Mutex
	tokens map[string]bool
	denied map[string]bool
}

// NewGCS starts an empty server and closes it by t.Cleanup.
func NewGCS(t testing.TB) *GCS {
	t.Helper()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true})
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &GCS{fake: fake, key: key, Email: "eddy-reader@eddy-test.iam.gserviceaccount.com",
		tokens: map[string]bool{}, denied: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", g.token)
	mux.Handle("/", g.authorize(fake.HTTPHandler()))
	g.srv = httptest.NewServer(mux)
	t.Cleanup(func() { g.srv.Close(); fake.Stop() })
	return g
}

// Host is the server's host:port (STORAGE_EMULATOR_HOST).
func (g *GCS) Host() string { return strings.TrimPrefix(g.srv.URL, "http://") }

// Allow makes the server take token.
func (g *GCS) Allow(token string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokens[token] = true
}

// Deny makes every request on bucket answer 403 (or undoes it).
func (g *GCS) Deny(bucket string, deny bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.denied[bucket] = deny
}

// CreateBucket makes the bucket name.
func (g *GCS) CreateBucket(name string) {
	g.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
}

// Put writes the object key of bucket and returns its etag (the JSON
// API's).
func (g *GCS) Put(t testing.TB, bucket, key, content string) string {
	t.Helper()
	g.fake.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: key}, Content: []byte(content)})
	o, err := g.fake.GetObject(bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return o.Etag
}

// ServiceAccountKey is the JSON key of the service account (a Secret's
// `serviceaccount`), its token_uri this server's.
func (g *GCS) ServiceAccountKey() []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(g.key)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "eddy-test", "private_key_id": "k1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": g.Email,
		"client_id": "1", "token_uri": g.srv.URL + "/token"})
	return b
}

// gcsFail answers an error of the JSON API.
func gcsFail(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg,
		"errors": []map[string]string{{"message": msg, "domain": "global", "reason": reason}}}})
}

func (g *GCS) authorize(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		var denied string
		for b, d := range g.denied {
			if d && (strings.Contains(r.URL.Path, "/b/"+b+"/") || strings.HasSuffix(r.URL.Path, "/b/"+b)) {
				denied = b
			}
		}
		g.mu.Unlock()
		switch {
		case !ok:
			gcsFail(w, http.StatusUnauthorized, "authError", "Invalid Credentials")
		case denied != "":
			gcsFail(w, http.StatusForbidden, "forbidden", g.Email+" does not have storage.objects.list access to the Google Cloud Storage bucket. "+
				"Permission 'storage.objects.list' denied on resource (or it may not exist).")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// token is the JWT bearer grant: a JWT signed with the service account's
// key, for the read-only scope and this endpoint, gets a token.
func (g *GCS) token(w http.ResponseWriter, r *http.Request) {
	fail := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, msg)
	}
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		fail("unsupported grant")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		fail("not a JWT")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || rsa.VerifyPKCS1v15(&g.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		fail("Invalid JWT Signature.")
		return
	}
	var claims struct {
		Iss, Scope, Aud string
	}
	body, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if json.Unmarshal(body, &claims) != nil || claims.Iss != g.Email || claims.Aud != g.srv.URL+"/token" ||
		!strings.Contains(claims.Scope, "devstorage.read_only") {
		fail("Invalid JWT claims.")
		return
	}
	tok := "ya29.sa-" + base64.RawURLEncoding.EncodeToString(sum[:8])
	g.Allow(tok)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"expires_in":3599,"token_type":"Bearer"}`, tok)
}
