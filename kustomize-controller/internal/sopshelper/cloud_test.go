package sopshelper_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopshelper"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/getsops/sops/v3/azkv"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/gcpkms"
	"github.com/getsops/sops/v3/hcvault"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/kms"
	"golang.org/x/oauth2/google"
)

// decryptWith encrypts a dotenv with mk (sops' own key package, against a
// fake) and decrypts it with a helper given secret's entries.
func decryptWith(t *testing.T, mk keys.MasterKey, secret map[string]string) (string, error) {
	t.Helper()
	enc, err := sopstest.Encrypt([]byte("TOKEN=cloud-secret-1\n"), formats.Dotenv, sopstest.Options{Keys: []keys.MasterKey{mk}})
	if err != nil {
		t.Fatal(err)
	}
	var ks []sopswire.Key
	for name, v := range secret {
		ks = append(ks, sopswire.Key{Name: name, Data: []byte(v)})
	}
	d, key, err := sopshelper.New(ks)
	if err != nil {
		t.Fatalf("importing %s: %v", key, err)
	}
	plain, _, err := d.Decrypt(enc, formats.Dotenv, formats.Dotenv, true)
	return string(plain), err
}

func TestVaultTransitKeyDecryptsWithTheSecretsToken(t *testing.T) {
	v, stop := sopstest.NewVault("s.test-token")
	defer stop()
	t.Setenv("VAULT_TOKEN", "")
	mk, err := hcvault.NewMasterKeyFromURI(v.URL + "/v1/transit/keys/app")
	if err != nil {
		t.Fatal(err)
	}
	hcvault.Token(v.Token).ApplyToMasterKey(mk)
	plain, err := decryptWith(t, mk, map[string]string{sopswire.VaultToken: "s.test-token\n"})
	if err != nil || plain != "TOKEN=cloud-secret-1\n" {
		t.Fatalf("plain %q, error %v", plain, err)
	}
	if v.Decryptions() != 1 {
		t.Errorf("the fake decrypted %d data keys, want 1", v.Decryptions())
	}
	_, err = decryptWith(t, mk, map[string]string{sopswire.VaultToken: "s.wrong"})
	if err == nil || !strings.Contains(err.Error(), "failed to decrypt sops data key from Vault transit backend") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("wrong token: %v", err)
	}
}

// Without sops.vault-token the SDK's own token (VAULT_TOKEN, passed on
// by the controller) is used, as Flux falls back to sops' defaults.
func TestVaultTransitKeyWithoutSecretTokenUsesVAULT_TOKEN(t *testing.T) {
	v, stop := sopstest.NewVault("s.ambient")
	defer stop()
	t.Setenv("VAULT_TOKEN", "s.ambient")
	mk, err := hcvault.NewMasterKeyFromURI(v.URL + "/v1/transit/keys/app")
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := decryptWith(t, mk, nil); err != nil || plain != "TOKEN=cloud-secret-1\n" {
		t.Fatalf("plain %q, error %v", plain, err)
	}
}

func TestAWSKMSKeyDecryptsWithTheSecretsCredentials(t *testing.T) {
	k, stop := sopstest.NewAWSKMS("AKIDSECRET")
	defer stop()
	t.Setenv("AWS_ENDPOINT_URL_KMS", k.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDAMBIENT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ambient")
	mk := kms.NewMasterKeyFromArn(sopstest.KMSArn("app"), map[string]*string{"env": new("test")}, "")
	kms.NewCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDSECRET", "s", "")).ApplyToMasterKey(mk)
	plain, err := decryptWith(t, mk, map[string]string{sopswire.AWSKMS: "aws_access_key_id: AKIDSECRET\naws_secret_access_key: s\n"})
	if err != nil || plain != "TOKEN=cloud-secret-1\n" {
		t.Fatalf("plain %q, error %v", plain, err)
	}
	// Without the Secret's credentials, the environment's are used.
	_, err = decryptWith(t, mk, nil)
	if err == nil || !strings.Contains(err.Error(), "UnrecognizedClientException") {
		t.Fatalf("ambient credentials: %v", err)
	}
	_, _, err = sopshelper.New([]sopswire.Key{{Name: sopswire.AWSKMS, Data: []byte("[nope")}})
	if err == nil || !strings.HasPrefix(err.Error(), "failed to unmarshal AWS credentials file: ") {
		t.Fatalf("bad credentials file: %v", err)
	}
}

func TestAzureKeyVaultKeyDecryptsWithTheSecretsServicePrincipal(t *testing.T) {
	a, stop := sopstest.NewAzureKV("tenant-1", "client-1", "client-secret-1")
	defer stop()
	cred, err := azidentity.NewClientSecretCredential(a.Tenant, a.ClientID, a.ClientSecret, &azidentity.ClientSecretCredentialOptions{
		DisableInstanceDiscovery: true, ClientOptions: azcore.ClientOptions{Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: a.URL, Services: map[cloud.ServiceName]cloud.ServiceConfiguration{}}}})
	if err != nil {
		t.Fatal(err)
	}
	mk := azkv.NewMasterKey(a.URL, "app", "v1")
	azkv.NewTokenCredential(cred).ApplyToMasterKey(mk)
	plain, err := decryptWith(t, mk, map[string]string{sopswire.AzureKV: a.AzureConfig()})
	if err != nil || plain != "TOKEN=cloud-secret-1\n" {
		t.Fatalf("plain %q, error %v", plain, err)
	}
	_, err = decryptWith(t, mk, map[string]string{sopswire.AzureKV: strings.Replace(a.AzureConfig(), "client-secret-1", "wrong", 1)})
	if err == nil || !strings.Contains(err.Error(), "failed to decrypt sops data key with Azure Key Vault key") {
		t.Fatalf("wrong secret: %v", err)
	}
	_, _, err = sopshelper.New([]sopswire.Key{{Name: sopswire.AzureKV, Data: []byte("tenantId: t\n")}})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid data: requires a 'clientId' field") {
		t.Fatalf("incomplete config: %v", err)
	}
}

func TestGCPKMSKeyDecryptsWithTheSecretsServiceAccount(t *testing.T) {
	g, stop, err := sopstest.NewGCPKMS()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t.Setenv(gcpkms.SopsGCPKMSEndpointEnv, g.Endpoint)
	creds, err := google.CredentialsFromJSON(context.Background(), []byte(g.ServiceAccount), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		t.Fatal(err)
	}
	mk := gcpkms.NewMasterKeyFromResourceID(sopstest.GCPKeyID("app"))
	gcpkms.NewTokenSource(creds.TokenSource).ApplyToMasterKey(mk)
	plain, err := decryptWith(t, mk, map[string]string{sopswire.GCPKMS: g.ServiceAccount + "\n"})
	if err != nil || plain != "TOKEN=cloud-secret-1\n" {
		t.Fatalf("plain %q, error %v", plain, err)
	}
	if g.Decryptions() != 1 {
		t.Errorf("the fake decrypted %d data keys, want 1", g.Decryptions())
	}
	_, _, err = sopshelper.New([]sopswire.Key{{Name: sopswire.GCPKMS, Data: []byte("{")}})
	if err == nil {
		t.Fatal("a bad service account JSON was imported")
	}
}
