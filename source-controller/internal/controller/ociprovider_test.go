package controller

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cloudRegistry is a registry that takes only user and password, reached
// through a proxy (spec.proxySecretRef) that sends the cloud registry's
// host name to it and every other request where it was going (the fake
// token services on loopback).
type cloudRegistry struct {
	reg   *testenv.Registry
	proxy *httptest.Server
}

func newCloudRegistry(t *testing.T, host, user, password string) *cloudRegistry {
	t.Helper()
	c := &cloudRegistry{reg: testenv.NewRegistry(t, testenv.WithBasicAuth(user, password))}
	c.proxy = newHostProxy(t, host, c.reg.Host())
	return c
}

// newHostProxy is a proxy that sends the requests for host to target
// (host:port) and every other request where it was going.
func newHostProxy(t *testing.T, host, target string) *httptest.Server {
	t.Helper()
	p := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		out := *pr.In.URL
		if out.Hostname() == host {
			out.Host = target
		}
		pr.Out.URL = &out
	}})
	t.Cleanup(p.Close)
	return p
}

// repository creates an OCIRepository of url with provider, through the
// proxy, after pushing an artifact to the registry with its credentials.
func (c *cloudRegistry) repository(t *testing.T, ns, name, url, provider string, user, password string, labels map[string]string) *sourcev1.OCIRepository {
	t.Helper()
	_, path, _ := strings.Cut(strings.TrimPrefix(url, "oci://"), "/")
	pushFiles(t, c.reg, path, "latest", "r1", map[string]string{"a.yaml": "a\n"}, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	createSecret(t, ns, name+"-proxy", map[string]string{"address": c.proxy.URL})
	return newOCIRepository(t, ns, name, url, func(o *sourcev1.OCIRepository) {
		o.Labels = labels
		o.Spec.Provider = provider
		o.Spec.Insecure = true
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: name + "-proxy"}
	})
}

// awsEnv points the AWS SDK of this process, and of the controllers it
// starts, at fake with static keys only.
func awsEnv(t *testing.T, fake *cloudfake.AWS) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_ECR": fake.URL, "AWS_ENDPOINT_URL_STS": fake.URL, "AWS_ACCESS_KEY_ID": "AKIAFAKESTATIC",
		"AWS_SECRET_ACCESS_KEY": "static-secret", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": ""} {
		t.Setenv(k, v)
	}
}

// TestOCIRepositoryProviderAWSPullsWithECRToken: provider aws gets an ECR
// token (a fake ECR API through AWS_ENDPOINT_URL_ECR) for the registry
// `<account>.dkr.ecr.<region>.amazonaws.com` and pulls with it as user
// AWS; a registry host that is not ECR's fails with Flux's message.
func TestOCIRepositoryProviderAWSPullsWithECRToken(t *testing.T) {
	const host = "111111111111.dkr.ecr.eu-central-1.amazonaws.com"
	fake := cloudfake.StartAWS("ecr-s3cret-pass", "AKIAFAKESTATIC")
	defer fake.Close()
	awsEnv(t, fake)
	ns := newNamespace(t)
	c := newCloudRegistry(t, host, "AWS", "ecr-s3cret-pass")
	got := waitOCIReady(t, c.repository(t, ns, "ecr", "oci://"+host+"/app", sourcev1.OCIProviderAWS, "AWS", "ecr-s3cret-pass", nil))
	download(t, got.Status.Artifact)
	if n, regions := fake.Issued(); n != 1 || regions[0] != "eu-central-1" {
		t.Errorf("%d ECR tokens in %v, want 1 in eu-central-1", n, regions)
	}
	other := newOCIRepository(t, ns, "not-ecr", "oci://"+c.reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Provider = sourcev1.OCIProviderAWS
	})
	bad := waitOCIFailed(t, other, sourcev1.AuthenticationFailedReason)
	checkFailureMessage(t, bad, "failed to get credential from aws: invalid AWS registry: '"+c.reg.Host()+"'. must match ")
}

// TestBinaryOCIRepositoryProviderAWS: the built binary, with the fake ECR
// endpoint and static keys in its environment, pulls with ECR's token.
func TestBinaryOCIRepositoryProviderAWS(t *testing.T) {
	const host = "222222222222.dkr.ecr.us-west-2.amazonaws.com"
	fake := cloudfake.StartAWS("ecr-binary-pass", "AKIAFAKESTATIC")
	defer fake.Close()
	awsEnv(t, fake)
	runBinaryShard(t, "binary-aws")
	ns := newNamespace(t)
	c := newCloudRegistry(t, host, "AWS", "ecr-binary-pass")
	obj := c.repository(t, ns, "ecr", "oci://"+host+"/app", sourcev1.OCIProviderAWS, "AWS", "ecr-binary-pass",
		map[string]string{shardKey: "binary-aws"})
	got := waitOCIReady(t, obj)
	download(t, got.Status.Artifact)
	if n, _ := fake.Issued(); n != 1 {
		t.Errorf("%d ECR tokens issued to the binary, want 1", n)
	}
}

// TestOCIRepositoryProviderGCPPullsWithMetadataToken: provider gcp gets
// the default service account's access token from a fake metadata server
// (GCE_METADATA_HOST) and pulls from an Artifact Registry host with it as
// user oauth2accesstoken; a host that is not Google's fails with Flux's
// message.
func TestOCIRepositoryProviderGCPPullsWithMetadataToken(t *testing.T) {
	const host = "europe-west1-docker.pkg.dev"
	md := cloudfake.StartGCEMetadata("ya29.s3cret-in-process")
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", md.Host)
	ns := newNamespace(t)
	c := newCloudRegistry(t, host, "oauth2accesstoken", "ya29.s3cret-in-process")
	got := waitOCIReady(t, c.repository(t, ns, "gar", "oci://"+host+"/app", sourcev1.OCIProviderGCP, "oauth2accesstoken", "ya29.s3cret-in-process", nil))
	download(t, got.Status.Artifact)
	other := newOCIRepository(t, ns, "not-gar", "oci://"+c.reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Provider = sourcev1.OCIProviderGCP
	})
	bad := waitOCIFailed(t, other, sourcev1.AuthenticationFailedReason)
	checkFailureMessage(t, bad, "failed to get credential from gcp: invalid GCP registry: '"+c.reg.Host()+"'. must match ")

	// A service account without pull secrets would mean object-level
	// workload identity: refused, not answered with the controller's own.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}}
	if err := env.Client.Create(context.Background(), sa); err != nil {
		t.Fatal(err)
	}
	tenant := newOCIRepository(t, ns, "tenant", "oci://"+host+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Provider = sourcev1.OCIProviderGCP
		o.Spec.ServiceAccountName = "tenant"
	})
	refused := waitOCIFailed(t, tenant, meta.FeatureGateDisabledReason)
	checkFailureMessage(t, refused, "spec.serviceAccountName with provider 'gcp' is not supported")
	if !apimeta.IsStatusConditionTrue(refused.Status.Conditions, meta.StalledCondition) {
		t.Errorf("not Stalled: %+v", refused.Status.Conditions)
	}
}

// TestBinaryOCIRepositoryProviderGCP: the built binary, with
// GCE_METADATA_HOST in its environment, pulls with the metadata server's
// token.
func TestBinaryOCIRepositoryProviderGCP(t *testing.T) {
	const host = "gcr.io"
	md := cloudfake.StartGCEMetadata("ya29.binary")
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", md.Host)
	runBinaryShard(t, "binary-gcp")
	ns := newNamespace(t)
	c := newCloudRegistry(t, host, "oauth2accesstoken", "ya29.binary")
	obj := c.repository(t, ns, "gcr", "oci://"+host+"/proj/app", sourcev1.OCIProviderGCP, "oauth2accesstoken", "ya29.binary",
		map[string]string{shardKey: "binary-gcp"})
	download(t, waitOCIReady(t, obj).Status.Artifact)
	if n := md.Issued(); n != 1 {
		t.Errorf("%d tokens issued to the binary, want 1", n)
	}
}
