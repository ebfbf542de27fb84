// Package cloudfake serves local fakes of the token services that
// package cloudauth calls, for tests: GitHub's App API, ECR, the GCE
// metadata server, Entra ID, Azure's instance metadata service and ACR's
// token exchange. Each records what it was asked and checks what a real
// service would check first.
package cloudfake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GitHub is a fake GitHub API that issues installation tokens to one App.
type GitHub struct {
	URL string
	// AppID and InstallationID are the App it serves; Key verifies JWTs.
	AppID, InstallationID int64
	Owner                 string
	Key                   *rsa.PublicKey
	// Token is issued, valid for TTL.
	Token string
	TTL   time.Duration

	srv    *httptest.Server
	mu     sync.Mutex
	issued int
}

// StartGitHub serves the App appID, installed as installationID for
// owner, whose JWTs key verifies; it issues token.
func StartGitHub(appID, installationID int64, owner string, key *rsa.PublicKey, token string) *GitHub {
	g := &GitHub{AppID: appID, InstallationID: installationID, Owner: owner, Key: key, Token: token, TTL: time.Hour}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	return g
}

// Close stops the server.
func (g *GitHub) Close() { g.srv.Close() }

// Issued counts the installation tokens issued.
func (g *GitHub) Issued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.issued
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	if err := g.verifyJWT(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded: " + err.Error()})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == fmt.Sprintf("/app/installations/%d/access_tokens", g.InstallationID):
		g.mu.Lock()
		g.issued++
		g.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"token": g.Token, "expires_at": time.Now().Add(g.TTL).UTC().Format(time.RFC3339)})
	case r.Method == http.MethodGet && g.Owner != "" && r.URL.Path == "/users/"+g.Owner+"/installation":
		writeJSON(w, http.StatusOK, map[string]any{"id": g.InstallationID})
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

// verifyJWT checks an RS256 JWT's signature, its issuer and its times.
func (g *GitHub) verifyJWT(tok string) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(g.Key, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var c struct {
		Iss      string `json:"iss"`
		Iat, Exp int64
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	now := time.Now().Unix()
	switch {
	case c.Iss != strconv.FormatInt(g.AppID, 10):
		return fmt.Errorf("issuer %q", c.Iss)
	case c.Iat > now || c.Exp < now || c.Exp-c.Iat > 600:
		return fmt.Errorf("'Expiration time' claim ('exp') is too far in the future or past")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
