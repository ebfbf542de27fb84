package cloudauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"time"
)

// gcpPattern is Google's registries: Container Registry (`*.gcr.io`),
// Artifact Registry (`*-docker.pkg.dev`) and S3NS, as Flux matches them.
const gcpPattern = `^(((.+\.)?gcr\.io)|(.+-docker\.pkg\.dev)|(docker\.s3nsregistry\.fr))$`

var gcpRegex = regexp.MustCompile(gcpPattern)

// GCPRegistryUser is the user of a registry's basic auth with an access
// token as password.
const GCPRegistryUser = "oauth2accesstoken"

// gcpCredentials is the metadata server's access token (GCPToken) as a
// registry's basic auth.
func gcpCredentials(ctx context.Context, hc *http.Client) (Credentials, error) {
	tok, exp, err := GCPToken(ctx, hc)
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to get access token for artifact registry: %w", err)
	}
	return Credentials{Username: GCPRegistryUser, Password: tok, ExpiresAt: exp}, nil
}

// GCPToken asks the metadata server (GKE's Workload Identity server, or a
// VM's) for the default service account's access token and returns it
// with its expiry, at GCE_METADATA_HOST when set, as Google's libraries
// do. Unlike Flux, which takes Google's whole default chain, a
// credentials file (GOOGLE_APPLICATION_CREDENTIALS) is not read.
func GCPToken(ctx context.Context, hc *http.Client) (string, time.Time, error) {
	host := os.Getenv("GCE_METADATA_HOST")
	if host == "" {
		host = "169.254.169.254"
	}
	u := "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	// The metadata server is local to the node: never through a proxy.
	c := *hc
	if t, ok := hc.Transport.(*http.Transport); ok {
		t = t.Clone()
		t.Proxy = nil
		c.Transport = t
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("metadata server %s: %s", u, resp.Status)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&tok); err != nil || tok.AccessToken == "" {
		return "", time.Time{}, errors.New("the metadata server's answer has no access token")
	}
	return tok.AccessToken, time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second), nil
}
