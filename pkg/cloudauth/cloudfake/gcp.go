package cloudfake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// GCEMetadata is a fake GCE/GKE metadata server issuing one access token
// for the default service account. Point Google's clients (and Eddy) at
// it with GCE_METADATA_HOST set to Host.
type GCEMetadata struct {
	Host  string
	Token string

	srv     *httptest.Server
	mu      sync.Mutex
	issued  int
	failing int
}

// StartGCEMetadata serves token.
func StartGCEMetadata(token string) *GCEMetadata {
	m := &GCEMetadata{Token: token}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	m.Host = strings.TrimPrefix(m.srv.URL, "http://")
	return m
}

// Close stops the server.
func (m *GCEMetadata) Close() { m.srv.Close() }

// Issued counts the tokens issued.
func (m *GCEMetadata) Issued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.issued
}

// FailWith makes the token requests answer status (0: serve tokens
// again), with a body a client must not quote (it looks like a token).
func (m *GCEMetadata) FailWith(status int) {
	m.mu.Lock()
	m.failing = status
	m.mu.Unlock()
}

func (m *GCEMetadata) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	failing := m.failing
	m.mu.Unlock()
	if failing != 0 {
		http.Error(w, "backend error: ya29.must-not-leak", failing)
		return
	}
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	if r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/token" {
		http.NotFound(w, r)
		return
	}
	m.mu.Lock()
	m.issued++
	m.mu.Unlock()
	w.Header().Set("Metadata-Flavor", "Google")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": m.Token, "expires_in": 3599, "token_type": "Bearer"})
}
