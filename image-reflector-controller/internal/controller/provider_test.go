package controller

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"testing"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newHostProxy is a proxy that sends the requests for each host of routes
// to its target (host:port) and every other request where it was going
// (the fake token services on loopback).
func newHostProxy(t *testing.T, routes map[string]string) *httptest.Server {
	t.Helper()
	p := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		out := *pr.In.URL
		if target, ok := routes[out.Hostname()]; ok {
			out.Host = target
		}
		pr.Out.URL = &out
	}})
	t.Cleanup(p.Close)
	return p
}

// awsEnv points the AWS SDK of the controllers this process starts at fake,
// with static keys only.
func awsEnv(t *testing.T, fake *cloudfake.AWS) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_ECR": fake.URL, "AWS_ENDPOINT_URL_STS": fake.URL, "AWS_ACCESS_KEY_ID": "AKIAFAKESTATIC",
		"AWS_SECRET_ACCESS_KEY": "static-secret", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": ""} {
		t.Setenv(k, v)
	}
}

// failedLike tells whether obj's Ready is False with reason and a message
// starting with prefix, not quoting the token service's answer.
func failedLike(obj client.Object, reason, prefix string) func() bool {
	return func() bool {
		c := ready(obj)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && strings.HasPrefix(c.Message, prefix) &&
			!strings.Contains(c.Message, "must-not-leak")
	}
}

// stalledWith tells whether obj is Stalled with reason and message.
func stalledWith(obj client.Object, reason, message string) func() bool {
	return func() bool {
		conds, _ := testenv.Conditions(obj)
		s := apimeta.FindStatusCondition(conds, meta.StalledCondition)
		return failedWith(obj, reason, message)() && s != nil && s.Status == metav1.ConditionTrue && s.Reason == reason
	}
}

// TestBinaryImageRepositoryCloudProviders: the built binary lists tags with
// a cloud provider's registry credentials, as Flux, through
// spec.proxySecretRef's proxy (which answers for the cloud registry hosts
// with local registries that take only those credentials): aws with a
// fake ECR token (an ImagePolicy reflects a digest with it too), gcp with
// the fake metadata server's token after it answered an error (Flux's
// AuthenticationFailed, a stable message quoting nothing of the answer);
// aws on a host that is not ECR's fails with Flux's message, and
// spec.serviceAccountName with a provider stalls the repository and its
// policies.
func TestBinaryImageRepositoryCloudProviders(t *testing.T) {
	const ecrHost, garHost = "111111111111.dkr.ecr.eu-west-1.amazonaws.com", "europe-west1-docker.pkg.dev"
	c := newClient(t)
	fake := cloudfake.StartAWS("ecr-irc-pass", "AKIAFAKESTATIC")
	defer fake.Close()
	awsEnv(t, fake)
	md := cloudfake.StartGCEMetadata("ya29.irc-token")
	defer md.Close()
	md.FailWith(http.StatusInternalServerError)
	t.Setenv("GCE_METADATA_HOST", md.Host)
	ecr := testenv.NewRegistry(t, testenv.WithBasicAuth("AWS", "ecr-irc-pass"))
	ecr.Push(t, "app", "1.0.0")
	latest := ecr.Push(t, "app", "1.1.0")
	gar := testenv.NewRegistry(t, testenv.WithBasicAuth("oauth2accesstoken", "ya29.irc-token"))
	gar.Push(t, "proj/app", "2.0.0")
	proxy := newHostProxy(t, map[string]string{ecrHost: ecr.Host(), garHost: gar.Host()})
	ns := testenv.NewNamespace(t, c, "irc")
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxy"},
		StringData: map[string]string{"address": proxy.URL}})
	runBinary(t)
	cloud := func(provider string) func(*imagev1.ImageRepository) {
		return func(r *imagev1.ImageRepository) {
			r.Spec.Provider, r.Spec.Insecure, r.Spec.ProxySecretRef = provider, true, localRef("proxy")
		}
	}

	ecrRepo := imageRepository(ns, "ecr", ecrHost+"/app", cloud(imagev1.AWSProvider))
	pinned := imagePolicy(ns, "pinned", "ecr", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}},
		func(p *imagev1.ImagePolicy) { p.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent })
	create(t, c, ecrRepo, pinned)
	testenv.WaitFor(t, c, ecrRepo, "Ready", func() bool { return isReady(ecrRepo) })
	if res := ecrRepo.Status.LastScanResult; res.TagCount != 2 {
		t.Errorf("lastScanResult %+v, want 2 tags", res)
	}
	testenv.WaitFor(t, c, pinned, "Ready", func() bool { return isReady(pinned) })
	if ref := pinned.Status.LatestRef; ref.Tag != "1.1.0" || ref.Digest != latest.String() {
		t.Errorf("latestRef %+v, want 1.1.0@%s", ref, latest)
	}
	if n, regions := fake.Issued(); n == 0 || regions[0] != "eu-west-1" {
		t.Errorf("%d ECR tokens in %v, want some in eu-west-1", n, regions)
	}

	garRepo := imageRepository(ns, "gar", garHost+"/proj/app", cloud(imagev1.GCPProvider))
	create(t, c, garRepo)
	want := "failed to configure authentication options: failed to get access token for artifact registry: metadata server http://" +
		md.Host + "/computeMetadata/v1/instance/service-accounts/default/token: 500 Internal Server Error"
	testenv.WaitFor(t, c, garRepo, "AuthenticationFailed", failedWith(garRepo, imagev1.AuthenticationFailedReason, want))
	md.FailWith(0)
	testenv.WaitFor(t, c, garRepo, "Ready once the metadata server answers", func() bool { return isReady(garRepo) })

	notECR := imageRepository(ns, "not-ecr", gar.Host()+"/proj/app", cloud(imagev1.AWSProvider))
	create(t, c, notECR)
	testenv.WaitFor(t, c, notECR, "invalid AWS registry", failedLike(notECR, imagev1.AuthenticationFailedReason,
		fmt.Sprintf("failed to configure authentication options: invalid AWS registry: '%s'. must match ", gar.Host())))

	create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}})
	tenant := imageRepository(ns, "tenant", garHost+"/proj/app", cloud(imagev1.GCPProvider),
		func(r *imagev1.ImageRepository) { r.Spec.ServiceAccountName = "tenant" })
	tenantPolicy := imagePolicy(ns, "tenant", "tenant", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "2.x"}})
	create(t, c, tenant, tenantPolicy)
	const unsupported = " with provider 'gcp' is not supported: Eddy implements no object-level workload identity; the controller's own identity is used without it"
	testenv.WaitFor(t, c, tenant, "Stalled", stalledWith(tenant, meta.FeatureGateDisabledReason, "spec.serviceAccountName"+unsupported))
	testenv.WaitFor(t, c, tenantPolicy, "Stalled", stalledWith(tenantPolicy, meta.FeatureGateDisabledReason,
		"spec.serviceAccountName in the ImageRepository"+unsupported))
	if n := md.Issued(); n == 0 {
		t.Error("no GCP token issued")
	}
}
