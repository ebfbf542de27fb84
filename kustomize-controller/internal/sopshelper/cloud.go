package sopshelper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
	"github.com/getsops/sops/v3/azkv"
	"github.com/getsops/sops/v3/gcpkms"
	"github.com/getsops/sops/v3/hcvault"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/kms"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
	"sigs.k8s.io/yaml"
)

// cloudCreds are the key management services' credentials of the
// decryption Secret. A service without one uses the SDK's own sources
// (the environment the controller passes on: workload identity, instance
// metadata, VAULT_TOKEN), as Flux uses the controller's.
type cloudCreds struct {
	vaultToken string
	aws        aws.CredentialsProvider
	azure      azcore.TokenCredential
	gcp        oauth2.TokenSource
}

// importCreds reads the Secret entry name (one of sopswire.Credentials),
// as Flux's kustomize-controller reads it.
func (c *cloudCreds) importCreds(name string, data []byte) error {
	switch name {
	case sopswire.VaultToken:
		c.vaultToken = strings.TrimSpace(string(data))
	case sopswire.AWSKMS:
		var f struct {
			AccessKeyID     string `json:"aws_access_key_id"`
			SecretAccessKey string `json:"aws_secret_access_key"`
			SessionToken    string `json:"aws_session_token"`
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			return fmt.Errorf("failed to unmarshal AWS credentials file: %w", err)
		}
		c.aws = credentials.NewStaticCredentialsProvider(f.AccessKeyID, f.SecretAccessKey, f.SessionToken)
	case sopswire.AzureKV:
		cred, err := azureCredential(data)
		if err != nil {
			return err
		}
		c.azure = cred
	case sopswire.GCPKMS:
		creds, err := google.CredentialsFromJSON(context.Background(), bytes.Trim(data, "\n"), "https://www.googleapis.com/auth/cloud-platform")
		if err != nil {
			return err
		}
		c.gcp = creds.TokenSource
	}
	return nil
}

// azureConfig is the sops.azure-kv entry: a service principal with a
// secret or a certificate, the older appId/tenant/password form, or a
// managed identity's clientId alone.
type azureConfig struct {
	TenantID                   string `json:"tenantId,omitempty"`
	ClientID                   string `json:"clientId,omitempty"`
	ClientSecret               string `json:"clientSecret,omitempty"`
	ClientCertificate          string `json:"clientCertificate,omitempty"`
	ClientCertificatePassword  string `json:"clientCertificatePassword,omitempty"`
	ClientCertificateSendChain bool   `json:"clientCertificateSendChain,omitempty"`
	AuthorityHost              string `json:"authorityHost,omitempty"`
	AppID                      string `json:"appId,omitempty"`
	Tenant                     string `json:"tenant,omitempty"`
	Password                   string `json:"password,omitempty"`
}

var publicAuthorities = map[string]bool{
	cloud.AzurePublic.ActiveDirectoryAuthorityHost: true, cloud.AzureChina.ActiveDirectoryAuthorityHost: true, cloud.AzureGovernment.ActiveDirectoryAuthorityHost: true,
}

func azureCredential(data []byte) (azcore.TokenCredential, error) {
	// The file may be UTF-16 with a byte order mark (az CLI on Windows).
	data, _, err := transform.Bytes(unicode.BOMOverride(unicode.UTF8.NewDecoder()), data)
	if err != nil {
		return nil, fmt.Errorf("failed to decode Azure authentication file bytes: %w", err)
	}
	var c azureConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("failed to unmarshal Azure authentication file: %w", err)
	}
	opts := azcore.ClientOptions{Cloud: cloud.AzurePublic}
	// An authority of the Secret's own (Azure Stack, a sovereign cloud)
	// is trusted as named: Entra's instance discovery at
	// login.microsoftonline.com does not know it.
	custom := c.AuthorityHost != "" && !publicAuthorities[strings.TrimSuffix(c.AuthorityHost, "/")+"/"]
	if c.AuthorityHost != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: c.AuthorityHost, Services: map[cloud.ServiceName]cloud.ServiceConfiguration{}}
	}
	switch {
	case c.TenantID != "" && c.ClientID != "" && c.ClientSecret != "":
		return azidentity.NewClientSecretCredential(c.TenantID, c.ClientID, c.ClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: custom})
	case c.TenantID != "" && c.ClientID != "" && c.ClientCertificate != "":
		certs, key, err := azidentity.ParseCertificates([]byte(c.ClientCertificate), []byte(c.ClientCertificatePassword))
		if err != nil {
			return nil, err
		}
		return azidentity.NewClientCertificateCredential(c.TenantID, c.ClientID, certs, key,
			&azidentity.ClientCertificateCredentialOptions{ClientOptions: opts, SendCertificateChain: c.ClientCertificateSendChain, DisableInstanceDiscovery: custom})
	case c.Tenant != "" && c.AppID != "" && c.Password != "":
		return azidentity.NewClientSecretCredential(c.Tenant, c.AppID, c.Password,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: custom})
	case c.ClientID != "":
		return azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(c.ClientID)})
	}
	return nil, errors.New("invalid data: requires a 'clientId' field, a combination of 'tenantId', 'clientId' and 'clientSecret', or 'tenantId', 'clientId' and 'clientCertificate'")
}

// decryptCloud gets a data key from the key management service of k.
func (c *cloudCreds) decryptCloud(k *keyservice.Key, ciphertext []byte) ([]byte, error) {
	switch k := k.KeyType.(type) {
	case *keyservice.Key_VaultKey:
		mk := &hcvault.MasterKey{VaultAddress: k.VaultKey.VaultAddress, EnginePath: k.VaultKey.EnginePath, KeyName: k.VaultKey.KeyName, EncryptedKey: string(ciphertext)}
		if c.vaultToken != "" {
			hcvault.Token(c.vaultToken).ApplyToMasterKey(mk)
		}
		return mk.Decrypt()
	case *keyservice.Key_KmsKey:
		encCtx := map[string]*string{}
		for key, v := range k.KmsKey.Context {
			encCtx[key] = &v
		}
		mk := &kms.MasterKey{Arn: k.KmsKey.Arn, Role: k.KmsKey.Role, EncryptionContext: encCtx, AwsProfile: k.KmsKey.AwsProfile, EncryptedKey: string(ciphertext)}
		if c.aws != nil {
			kms.NewCredentialsProvider(c.aws).ApplyToMasterKey(mk)
		}
		return mk.Decrypt()
	case *keyservice.Key_AzureKeyvaultKey:
		mk := &azkv.MasterKey{VaultURL: k.AzureKeyvaultKey.VaultUrl, Name: k.AzureKeyvaultKey.Name, Version: k.AzureKeyvaultKey.Version, EncryptedKey: string(ciphertext)}
		if c.azure != nil {
			azkv.NewTokenCredential(c.azure).ApplyToMasterKey(mk)
		}
		return mk.Decrypt()
	case *keyservice.Key_GcpKmsKey:
		mk := &gcpkms.MasterKey{ResourceID: k.GcpKmsKey.ResourceId, EncryptedKey: string(ciphertext)}
		if c.gcp != nil {
			gcpkms.NewTokenSource(c.gcp).ApplyToMasterKey(mk)
		}
		return mk.Decrypt()
	}
	return nil, fmt.Errorf("%T keys are not supported by Eddy yet", k.KeyType)
}
