package cloudauth

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
)

// isolateAWS leaves the SDK only the environment the test sets: no
// shared files, no instance metadata, and the fake's endpoints.
func isolateAWS(t *testing.T, fake *cloudfake.AWS) {
	t.Helper()
	cache.forget()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_ECR": fake.URL, "AWS_ENDPOINT_URL_STS": fake.URL, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "", "AWS_PROFILE": "", "AWS_REGION": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": ""} {
		t.Setenv(k, v)
	}
}

func TestECRTokenWithEnvironmentKeysIsBasicAuthForUserAWS(t *testing.T) {
	fake := cloudfake.StartAWS("ecr-pass", "AKIAFAKESTATIC")
	defer fake.Close()
	isolateAWS(t, fake)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAFAKESTATIC")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "static-secret")
	for range 2 {
		c, err := RegistryCredentials(context.Background(), ProviderAWS, "012345678901.dkr.ecr.eu-west-3.amazonaws.com/apps/podinfo", http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		if c.Username != "AWS" || c.Password != "ecr-pass" {
			t.Fatalf("credentials %q/%q, want AWS and ECR's password", c.Username, c.Password)
		}
	}
	if n, regions := fake.Issued(); n != 1 || regions[0] != "eu-west-3" {
		t.Errorf("%d tokens issued in %v, want 1 (then cached) in the registry's region eu-west-3", n, regions)
	}
}

func TestECRTokenWithWebIdentityTokenFile(t *testing.T) {
	fake := cloudfake.StartAWS("irsa-pass")
	defer fake.Close()
	fake.WebIdentityToken = "projected-sa-token"
	isolateAWS(t, fake)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("projected-sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", file)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::012345678901:role/flux")
	c, err := RegistryCredentials(context.Background(), ProviderAWS, "012345678901.dkr.ecr.us-east-1.amazonaws.com/app", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if c.Password != "irsa-pass" {
		t.Errorf("password %q, want the one ECR gave the web identity's session", c.Password)
	}
}

func TestECRRefusesAnotherHostAndReportsAMissingIdentity(t *testing.T) {
	fake := cloudfake.StartAWS("never")
	defer fake.Close()
	isolateAWS(t, fake)
	_, err := RegistryCredentials(context.Background(), ProviderAWS, "ghcr.io/org/app", http.DefaultClient)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid AWS registry: 'ghcr.io'. must match ") {
		t.Errorf("error %v, want Flux's invalid AWS registry", err)
	}
	_, err = RegistryCredentials(context.Background(), ProviderAWS, "012345678901.dkr.ecr.us-east-1.amazonaws.com/app", http.DefaultClient)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to get access token for artifact registry: ") {
		t.Errorf("error %v, want no access token", err)
	}
	if n, _ := fake.Issued(); n != 0 {
		t.Errorf("%d tokens issued without an identity", n)
	}
}
