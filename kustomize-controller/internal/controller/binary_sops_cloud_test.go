package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor/sopstest"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/gcpkms"
	"github.com/getsops/sops/v3/hcvault"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/kms"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinarySOPSCloudKeys runs the built kustomize-controller and
// eddy-sops on Secrets whose data keys are wrapped by OpenBao/Vault
// transit, AWS KMS, Azure Key Vault and GCP KMS, each a local fake
// reached through the endpoint its SDK lets one set (the Vault address in
// the file, AWS_ENDPOINT_URL_KMS, the Azure key URL and authorityHost,
// SOPS_GCP_KMS_ENDPOINT; SSL_CERT_FILE trusts the TLS fakes): the
// credentials come from the decryption Secret's Flux entries. A second
// Kustomization without a decryption Secret decrypts its Vault file with
// the controller's own VAULT_TOKEN.
func TestBinarySOPSCloudKeys(t *testing.T) {
	const shard = "sops-cloud"
	ctx := context.Background()
	vault, stop := sopstest.NewVault("s.secret-token")
	defer stop()
	ambientVault, stop := sopstest.NewVault("s.controller-token")
	defer stop()
	awsKMS, stop := sopstest.NewAWSKMS("AKIDSECRET")
	defer stop()
	azure, stop := sopstest.NewAzureKV("tenant-1", "client-1", "client-secret-1")
	defer stop()
	gcp, stopGCP, err := sopstest.NewGCPKMS()
	if err != nil {
		t.Fatal(err)
	}
	defer stopGCP()
	ca, err := sopstest.TrustTLSFakes(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The controller passes these on to its helper.
	t.Setenv("SSL_CERT_FILE", ca)
	t.Setenv("AWS_ENDPOINT_URL_KMS", awsKMS.URL)
	t.Setenv(gcpkms.SopsGCPKMSEndpointEnv, gcp.Endpoint)
	t.Setenv("VAULT_TOKEN", "s.controller-token")
	testenv.RunController(t, env, ControllerName, "--watch-label-selector="+shardKey+"="+shard, "--min-retry-delay=200ms", "--max-retry-delay=2s")
	ns := newNamespace(t)

	vaultKey := func(v *sopstest.Vault, token string) keys.MasterKey {
		mk, err := hcvault.NewMasterKeyFromURI(v.URL + "/v1/transit/keys/app")
		if err != nil {
			t.Fatal(err)
		}
		hcvault.Token(token).ApplyToMasterKey(mk)
		return mk
	}
	awsKey := kms.NewMasterKeyFromArn(sopstest.KMSArn("app"), nil, "")
	kms.NewCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDSECRET", "s", "")).ApplyToMasterKey(awsKey)
	azureKey, err := azure.MasterKey("app")
	if err != nil {
		t.Fatal(err)
	}
	gcpKey, err := gcp.MasterKey("app")
	if err != nil {
		t.Fatal(err)
	}
	plaintexts := map[string]string{"vault": "vault-plaintext-1", "aws": "aws-plaintext-2", "azure": "azure-plaintext-3", "gcp": "gcp-plaintext-4"}
	masterKeys := map[string]keys.MasterKey{"vault": vaultKey(vault, vault.Token), "aws": awsKey, "azure": azureKey, "gcp": gcpKey}
	files := map[string]string{"kustomization.yaml": "resources: [vault.yaml, aws.yaml, azure.yaml, gcp.yaml]\n"}
	for name, mk := range masterKeys {
		plain := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData:\n  token: %s\n", name, ns, plaintexts[name])
		out, err := sopstest.Encrypt([]byte(plain), formats.Yaml, sopstest.Options{Keys: []keys.MasterKey{mk}, EncryptedRegex: "^stringData$"})
		if err != nil {
			t.Fatal(err)
		}
		files[name+".yaml"] = string(out)
	}
	ambientPlain := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: ambient, namespace: %s}\nstringData:\n  token: ambient-plaintext-5\n", ns)
	out, err := sopstest.Encrypt([]byte(ambientPlain), formats.Yaml, sopstest.Options{Keys: []keys.MasterKey{vaultKey(ambientVault, ambientVault.Token)}, EncryptedRegex: "^stringData$"})
	if err != nil {
		t.Fatal(err)
	}
	files["ambient/ambient.yaml"] = string(out)
	files["ambient/kustomization.yaml"] = "resources: [ambient.yaml]\n"

	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-cloud", Namespace: ns}, StringData: map[string]string{
		sopswire.VaultToken: vault.Token + "\n",
		sopswire.AWSKMS:     "aws_access_key_id: AKIDSECRET\naws_secret_access_key: s\n",
		sopswire.AzureKV:    azure.AzureConfig(),
		sopswire.GCPKMS:     gcp.ServiceAccount,
	}}
	if err := env.Client.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, ns, "cloud", newRepo(t, files))
	k := newKustomization(t, ns, "cloud", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops-cloud"}}
	})
	amb := newKustomization(t, ns, "ambient", src.Name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Path = "./ambient"
		k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"}
	})
	waitApplied(t, k, src.Status.Artifact.Revision)
	waitApplied(t, amb, src.Status.Artifact.Revision)
	plaintexts["ambient"] = "ambient-plaintext-5"
	for name, want := range plaintexts {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if got := string(s.Data["token"]); got != want {
			t.Errorf("Secret %s token = %q, want the plaintext %q", name, got, want)
		}
	}
	for name, n := range map[string]int{"vault": vault.Decryptions(), "aws": awsKMS.Decryptions(), "azure": azure.Decryptions(), "gcp": gcp.Decryptions(), "ambient vault": ambientVault.Decryptions()} {
		if n == 0 {
			t.Errorf("the %s fake decrypted no data key", name)
		}
	}
}
