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

// gcpCredentials asks the metadata server (GKE's Workload Identity
// server, or a VM's) for the default service account's access token, at
// GCE_METADATA_HOST when set, as Google's libraries do. Unlike Flux,
// which takes Google's whole default chain, a credentials file
// (GOOGLE_APPLICATION_CREDENTIALS) is not read.
func gcpCredentials(ctx context.Context, hc *http.Client) (Credentials, error) {
	host := os.Getenv("GCE_METADATA_HOST")
	if host == "" {
		host = "169.254.169.254"
	}
	u := "http://" + host + "/computeMetadata/v1/instance/service-accounts/default/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Credentials{}, err
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
		return Credentials{}, fmt.Errorf("failed to get access token for artifact registry: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Credentials{}, fmt.Errorf("failed to get access token for artifact registry: metadata server %s: %s", u, resp.Status)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<16)).Decode(&tok); err != nil || tok.AccessToken == "" {
		return Credentials{}, errors.New("failed to get access token for artifact registry: the metadata server's answer has no access token")
	}
	return Credentials{Username: GCPRegistryUser, Password: tok.AccessToken,
		ExpiresAt: time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)}, nil
}
