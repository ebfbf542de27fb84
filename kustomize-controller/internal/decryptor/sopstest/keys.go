package sopstest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azkeys"
	"github.com/getsops/sops/v3/azkv"
	"github.com/getsops/sops/v3/gcpkms"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// fakesClient trusts the TLS fakes' certificate without SSL_CERT_FILE (a
// test process may have read its trust roots already).
func fakesClient() (*http.Client, *x509.CertPool) {
	pool := x509.NewCertPool()
	s := newTLSProbe()
	defer s.Close()
	pool.AddCert(s.Certificate())
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, pool
}

// MasterKey is an azkv key of the fake's (sops' own key package), with
// the fake's service principal: for sopstest.Options.Keys.
func (a *AzureKV) MasterKey(name string) (*azkv.MasterKey, error) {
	hc, _ := fakesClient()
	opts := azcore.ClientOptions{Transport: hc, Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: a.URL, Services: map[cloud.ServiceName]cloud.ServiceConfiguration{}}}
	cred, err := azidentity.NewClientSecretCredential(a.Tenant, a.ClientID, a.ClientSecret, &azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: true})
	if err != nil {
		return nil, err
	}
	mk := azkv.NewMasterKey(a.URL, name, "v1")
	azkv.NewTokenCredential(cred).ApplyToMasterKey(mk)
	azkv.NewClientOptions(&azkeys.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: hc}}).ApplyToMasterKey(mk)
	return mk, nil
}

// MasterKey is a gcpkms key of the fake's (sops' own key package), with
// the fake's service account: for sopstest.Options.Keys. SOPS_GCP_KMS_ENDPOINT
// must name the fake's Endpoint when it encrypts.
func (g *GCPKMS) MasterKey(name string) (*gcpkms.MasterKey, error) {
	hc, pool := fakesClient()
	creds, err := google.CredentialsFromJSON(context.WithValue(context.Background(), oauth2.HTTPClient, hc), []byte(g.ServiceAccount), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return nil, err
	}
	mk := gcpkms.NewMasterKeyFromResourceID(GCPKeyID(name))
	gcpkms.NewTokenSource(creds.TokenSource).ApplyToMasterKey(mk)
	gcpkms.DialOptions{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool}))}.ApplyToMasterKey(mk)
	return mk, nil
}
