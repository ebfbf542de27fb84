package decryptor

import (
	"slices"
	"testing"
)

func TestHelperEnvKeepsCloudCredentialVariablesOnly(t *testing.T) {
	got := helperEnv([]string{"PATH=/bin", "AWS_ROLE_ARN=r", "AZURE_FEDERATED_TOKEN_FILE=f", "VAULT_TOKEN=t",
		"SOPS_AGE_KEY=k", "SOPS_GCP_KMS_ENDPOINT=e", "SSL_CERT_FILE=c", "KUBECONFIG=x", "GOOGLE_APPLICATION_CREDENTIALS=g"})
	want := []string{"AWS_ROLE_ARN=r", "AZURE_FEDERATED_TOKEN_FILE=f", "VAULT_TOKEN=t", "SOPS_GCP_KMS_ENDPOINT=e", "SSL_CERT_FILE=c", "GOOGLE_APPLICATION_CREDENTIALS=g"}
	if !slices.Equal(got, want) {
		t.Fatalf("helperEnv = %q, want %q", got, want)
	}
}
