package cloudauth

import (
	"context"
	"strings"
	"testing"
)

// TestProviderHostChecksRefuseForeignHosts: a repository whose host a URL
// reads as another host (`?`, `#`, `@`), or an ECR host with a suffix, is
// refused before any token is asked for, so no provider's token can be
// sent to a host that is not the provider's registry.
func TestProviderHostChecksRefuseForeignHosts(t *testing.T) {
	for _, repo := range []string{"attacker.example?.azurecr.io", "attacker.example#.azurecr.io",
		"user@attacker.example.azurecr.io", "attacker.example?.gcr.io", ""} {
		if h, err := RegistryHost(repo); err == nil {
			t.Errorf("%q read as registry %q", repo, h)
		}
	}
	for _, p := range []string{ProviderAzure, ProviderGCP, ProviderAWS} {
		_, err := RegistryCredentials(context.Background(), p, "attacker.example?.azurecr.io", nil)
		if err == nil || !strings.Contains(err.Error(), "invalid registry host") {
			t.Errorf("%s: %v", p, err)
		}
	}
	h, err := RegistryHost("123456789012.dkr.ecr.us-east-1.amazonaws.com.attacker.example/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseECRHost(h); err == nil {
		t.Errorf("aws: %q accepted as an ECR host", h)
	}
	for _, ok := range []string{"123456789012.dkr.ecr.us-east-1.amazonaws.com/app", "registry.azurecr.io", "localhost:5000/x", "europe-docker.pkg.dev/p/r"} {
		if _, err := RegistryHost(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if r, err := ParseECRHost("123456789012.dkr.ecr.us-east-1.amazonaws.com"); err != nil || r != "us-east-1" {
		t.Errorf("ECR host: %q %v", r, err)
	}
}
