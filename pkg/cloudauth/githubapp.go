package cloudauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The keys of a GitRepository's spec.secretRef with provider github, as
// Flux names them.
const (
	KeyAppID                = "githubAppID"
	KeyAppInstallationID    = "githubAppInstallationID"
	KeyAppInstallationOwner = "githubAppInstallationOwner"
	KeyAppPrivateKey        = "githubAppPrivateKey"
	KeyAppBaseURL           = "githubAppBaseURL"

	// GitHubAppUsername is the basic auth user of an installation token.
	GitHubAppUsername = "x-access-token"
	// DefaultGitHubAPI is github.com's API, used without githubAppBaseURL.
	DefaultGitHubAPI = "https://api.github.com"
)

// GitHubApp is a GitHub App installation, read from a Secret.
type GitHubApp struct {
	AppID             int64
	InstallationID    int64
	InstallationOwner string
	BaseURL           string
	key               *rsa.PrivateKey
	keyPEM            []byte
}

// HasGitHubAppData tells whether a Secret carries a GitHub App's ID.
func HasGitHubAppData(data map[string][]byte) bool { return len(data[KeyAppID]) > 0 }

// GitHubAppFromSecret reads and checks a GitHub App's keys, with Flux's
// messages.
func GitHubAppFromSecret(data map[string][]byte) (*GitHubApp, error) {
	a := &GitHubApp{InstallationOwner: string(data[KeyAppInstallationOwner]), BaseURL: string(data[KeyAppBaseURL]),
		keyPEM: data[KeyAppPrivateKey]}
	a.AppID, _ = strconv.ParseInt(string(data[KeyAppID]), 10, 64)
	a.InstallationID, _ = strconv.ParseInt(string(data[KeyAppInstallationID]), 10, 64)
	switch {
	case a.AppID == 0:
		return nil, errors.New("app ID must be provided to use github app authentication")
	case a.InstallationOwner == "" && a.InstallationID == 0:
		return nil, errors.New("app installation owner or ID must be provided to use github app authentication")
	case a.InstallationOwner != "" && a.InstallationID != 0:
		return nil, errors.New("only one of app installation owner or ID must be provided to use github app authentication")
	case len(a.keyPEM) == 0:
		return nil, errors.New("private key must be provided to use github app authentication")
	}
	key, err := parseRSAKey(a.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("could not parse private key: %w", err)
	}
	a.key = key
	if a.BaseURL == "" {
		a.BaseURL = DefaultGitHubAPI
	}
	if _, err := url.Parse(a.BaseURL); err != nil {
		return nil, fmt.Errorf("invalid API URL: %w", err)
	}
	return a, nil
}

func parseRSAKey(b []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, errors.New("invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("key is not a valid RSA private key")
	}
	return rk, nil
}

// Credentials returns an installation token as basic auth for Git
// (user x-access-token), from the cache while it is fresh.
func (a *GitHubApp) Credentials(ctx context.Context, hc *http.Client) (Credentials, error) {
	key := cacheKey("github", strconv.FormatInt(a.AppID, 10), strconv.FormatInt(a.InstallationID, 10),
		a.InstallationOwner, a.BaseURL, string(a.keyPEM))
	return cache.getOrNew(ctx, key, func(ctx context.Context) (Credentials, error) {
		return a.newToken(ctx, hc)
	})
}

// jwt signs the App's JWT (RS256, iss the App ID), backdated 30s for
// clock drift and valid 2 minutes: it only buys the installation token.
func (a *GitHubApp) jwt() (string, error) {
	iat := time.Now().Add(-30 * time.Second).Unix()
	enc := base64.RawURLEncoding
	claims, _ := json.Marshal(map[string]any{"iat": iat, "exp": iat + 120, "iss": strconv.FormatInt(a.AppID, 10)})
	signing := enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, a.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

func (a *GitHubApp) newToken(ctx context.Context, hc *http.Client) (Credentials, error) {
	jwt, err := a.jwt()
	if err != nil {
		return Credentials{}, err
	}
	id := a.InstallationID
	if id == 0 {
		if id, err = a.findInstallation(ctx, hc, jwt); err != nil {
			return Credentials{}, err
		}
	}
	var tok struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := a.call(ctx, hc, jwt, http.MethodPost, fmt.Sprintf("/app/installations/%d/access_tokens", id), &tok); err != nil {
		return Credentials{}, err
	}
	if tok.Token == "" {
		return Credentials{}, errors.New("github app: the installation token response has no token")
	}
	return Credentials{Username: GitHubAppUsername, Password: tok.Token, ExpiresAt: tok.ExpiresAt}, nil
}

// findInstallation looks githubAppInstallationOwner up as an organization,
// then as a user.
func (a *GitHubApp) findInstallation(ctx context.Context, hc *http.Client, jwt string) (int64, error) {
	var inst struct {
		ID int64 `json:"id"`
	}
	owner := url.PathEscape(a.InstallationOwner)
	errOrg := a.call(ctx, hc, jwt, http.MethodGet, "/orgs/"+owner+"/installation", &inst)
	if errOrg == nil {
		return inst.ID, nil
	}
	errUser := a.call(ctx, hc, jwt, http.MethodGet, "/users/"+owner+"/installation", &inst)
	if errUser == nil {
		return inst.ID, nil
	}
	return 0, errors.Join(fmt.Errorf("failed to find organization installation: %w", errOrg),
		fmt.Errorf("failed to find user installation: %w", errUser))
}

// call sends one API request with the App's JWT and decodes a 2xx answer
// into out; an error names the method, URL, status and GitHub's message.
func (a *GitHubApp) call(ctx context.Context, hc *http.Client, jwt, method, path string, out any) error {
	u := strings.TrimSuffix(a.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+jwt)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&e)
		return fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, e.Message)
	}
	return json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(out)
}
