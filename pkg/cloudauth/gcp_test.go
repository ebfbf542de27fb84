package cloudauth

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
)

func TestGCPTokenFromTheMetadataServerIsBasicAuthForOAuth2AccessToken(t *testing.T) {
	cache.forget()
	md := cloudfake.StartGCEMetadata("ya29.fake")
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", md.Host)
	for _, repo := range []string{"europe-west1-docker.pkg.dev/proj/repo/app", "gcr.io/proj/app", "eu.gcr.io/proj/app"} {
		c, err := RegistryCredentials(context.Background(), ProviderGCP, repo, http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		if c.Username != "oauth2accesstoken" || c.Password != "ya29.fake" {
			t.Errorf("%s: credentials %q/%q, want oauth2accesstoken and the access token", repo, c.Username, c.Password)
		}
	}
	if n := md.Issued(); n != 1 {
		t.Errorf("%d tokens issued, want 1 for every Google registry", n)
	}
	_, err := RegistryCredentials(context.Background(), ProviderGCP, "ghcr.io/org/app", http.DefaultClient)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid GCP registry: 'ghcr.io'. must match ") {
		t.Errorf("error %v, want Flux's invalid GCP registry", err)
	}
}
