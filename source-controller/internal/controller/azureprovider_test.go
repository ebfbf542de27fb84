package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trustCloudFakes makes this process, and the controllers it starts,
// trust the TLS certificate of the cloud fakes (ACR is reached over
// HTTPS only): SSL_CERT_FILE, set before anything reads the trust roots.
func trustCloudFakes() {
	p := filepath.Join(os.TempDir(), fmt.Sprintf("eddy-cloudfakes-%d.pem", os.Getpid()))
	if err := cloudfake.WriteTrust(p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Setenv("SSL_CERT_FILE", p)
}

// azureFixture is Entra ID (workload identity), an ACR front over TLS
// (token exchange, then the registry behind it for the bearers of its
// refresh tokens) and the proxy of spec.proxySecretRef: it tunnels
// `*.azurecr.io` to the ACR front, forwards the rest, and records the
// hosts it saw.
type azureFixture struct {
	entra *cloudfake.Entra
	acr   *cloudfake.ACR
	reg   *testenv.Registry
	proxy *httptest.Server

	mu   sync.Mutex
	seen []string
}

func newAzureFixture(t *testing.T) *azureFixture {
	t.Helper()
	f := &azureFixture{entra: cloudfake.StartEntra("tenant-eddy", "client-eddy", "projected-sa-token")}
	t.Cleanup(f.entra.Close)
	toRegistry := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host = "http", f.reg.Host()
	}}
	f.acr = cloudfake.StartACR(f.entra.ScopeOf, toRegistry, 3*time.Hour)
	t.Cleanup(f.acr.Close)
	f.reg = testenv.NewRegistry(t)
	forward := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL = pr.In.URL }}
	f.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.Host)
		f.mu.Unlock()
		if r.Method == http.MethodConnect {
			f.tunnel(w, r)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(f.proxy.Close)
	return f
}

// tunnel connects a CONNECT to an ACR host to the ACR front.
func (f *azureFixture) tunnel(w http.ResponseWriter, r *http.Request) {
	host, _, _ := strings.Cut(r.Host, ":")
	if !strings.HasSuffix(host, ".azurecr.io") {
		http.Error(w, "no tunnel there", http.StatusForbidden)
		return
	}
	up, err := net.Dial("tcp", f.acr.Addr)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() { _, _ = io.Copy(up, conn); up.Close() }()
	go func() { _, _ = io.Copy(conn, up); conn.Close() }()
}

// viaProxy counts the proxied requests to host.
func (f *azureFixture) viaProxy(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, h := range f.seen {
		if h == host {
			n++
		}
	}
	return n
}

// workloadIdentity sets AKS's workload identity environment for this
// process and the controllers it starts; it clears the managed identity.
func (f *azureFixture) workloadIdentity(t *testing.T) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "azure-identity-token")
	if err := os.WriteFile(file, []byte(f.entra.FederatedToken), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AZURE_CLIENT_ID": f.entra.ClientID, "AZURE_TENANT_ID": f.entra.TenantID,
		"AZURE_FEDERATED_TOKEN_FILE": file, "AZURE_AUTHORITY_HOST": f.entra.URL, "AZURE_POD_IDENTITY_AUTHORITY_HOST": "http://127.0.0.1:1"} {
		t.Setenv(k, v)
	}
}

func (f *azureFixture) entraHost() string {
	return strings.TrimSuffix(strings.TrimPrefix(f.entra.URL, "http://"), "/")
}

// repository pushes an artifact to path and creates an OCIRepository of
// the ACR host with provider azure, through the proxy.
func (f *azureFixture) repository(t *testing.T, ns, name, host, path string, labels map[string]string) *sourcev1.OCIRepository {
	t.Helper()
	pushFiles(t, f.reg, path, "latest", "r1", map[string]string{"a.yaml": "a\n"})
	createSecret(t, ns, name+"-proxy", map[string]string{"address": f.proxy.URL})
	return newOCIRepository(t, ns, name, "oci://"+host+"/"+path, func(o *sourcev1.OCIRepository) {
		o.Labels = labels
		o.Spec.Provider = sourcev1.OCIProviderAzure
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: name + "-proxy"}
	})
}

// checkAzureFailure waits for provider azure's failure to get a token
// from Entra ID (answering 401) and checks Flux's reason and message
// shape, that a second attempt says the same, that no secret shows and
// that the last artifact is still served.
func (f *azureFixture) checkAzureFailure(t *testing.T, obj *sourcev1.OCIRepository, last *meta.Artifact) {
	t.Helper()
	want := "failed to get credential from azure: failed to get access token for artifact registry: " +
		"WorkloadIdentityCredential authentication failed: POST " + f.entra.URL + "tenant-eddy/oauth2/v2.0/token: " +
		"401 Unauthorized: invalid_client (AADSTS700016)"
	bad := waitOCIFailed(t, obj, sourcev1.AuthenticationFailedReason)
	if msg := readyMessage(bad); msg != want {
		t.Errorf("Ready message %q, want %q", msg, want)
	}
	checkFailureMessage(t, bad, "", append(f.acr.RefreshTokens(), "projected-sa-token", "Trace ID", f.entra.TokenFor(cloudfake.ACRScope))...)
	again := requestOCIReconcile(t, bad)
	if readyMessage(again) != readyMessage(bad) {
		t.Errorf("the message changed between attempts: %q then %q", readyMessage(bad), readyMessage(again))
	}
	if again.Status.Artifact == nil || again.Status.Artifact.Digest != last.Digest {
		t.Errorf("artifact %+v after the failure, want the last one %s kept", again.Status.Artifact, last.Digest)
	}
	download(t, again.Status.Artifact)
}

// TestOCIRepositoryProviderAzurePullsWithACRRefreshToken: provider azure
// trades the workload identity's federated token for an Entra ID token of
// ACR's scope (through spec.proxySecretRef's proxy), exchanges it at the
// registry's /oauth2/exchange (HTTPS) and pulls as
// 00000000-0000-0000-0000-000000000000 with the refresh token. Entra ID
// then answering 401 fails with Flux's reason, the artifact kept; a
// host that is not ACR's, and a service account, are refused.
func TestOCIRepositoryProviderAzurePullsWithACRRefreshToken(t *testing.T) {
	f := newAzureFixture(t)
	f.workloadIdentity(t)
	// Short-lived tokens, so that the failure below is met once they expire.
	f.entra.SetTTL(6 * time.Second)
	f.acr.SetTTL(6 * time.Second)
	ns := newNamespace(t)
	obj := f.repository(t, ns, "acr", "eddy.azurecr.io", "apps/podinfo", nil)
	got := waitOCIReady(t, obj)
	download(t, got.Status.Artifact)
	if scopes := f.entra.Issued(); len(scopes) != 1 || scopes[0] != cloudfake.ACRScope {
		t.Errorf("Entra ID tokens for %v, want one for ACR's scope", scopes)
	}
	if ex := f.acr.Exchanges(); len(ex) != 1 || ex[0] != "eddy.azurecr.io" {
		t.Errorf("ACR exchanges %v, want one for eddy.azurecr.io", ex)
	}
	// The token exchange and the pull each open a tunnel.
	if f.viaProxy(f.entraHost()) != 1 || f.viaProxy("eddy.azurecr.io:443") < 2 {
		t.Errorf("proxied %v, want Entra ID's request and ACR's tunnels", f.seen)
	}

	other := newOCIRepository(t, ns, "not-acr", "oci://"+f.reg.Host()+"/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Provider = sourcev1.OCIProviderAzure
	})
	checkFailureMessage(t, waitOCIFailed(t, other, sourcev1.AuthenticationFailedReason),
		"failed to get credential from azure: invalid Azure registry: '"+f.reg.Host()+"'. must match ")
	// A service account without pull secrets would mean object-level
	// workload identity: refused, not answered with the controller's own.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}}
	if err := env.Client.Create(context.Background(), sa); err != nil {
		t.Fatal(err)
	}
	tenant := newOCIRepository(t, ns, "tenant", "oci://eddy.azurecr.io/app", func(o *sourcev1.OCIRepository) {
		o.Spec.Provider = sourcev1.OCIProviderAzure
		o.Spec.ServiceAccountName = "tenant"
	})
	refused := waitOCIFailed(t, tenant, meta.FeatureGateDisabledReason)
	checkFailureMessage(t, refused, "spec.serviceAccountName with provider 'azure' is not supported")
	if !apimeta.IsStatusConditionTrue(refused.Status.Conditions, meta.StalledCondition) {
		t.Errorf("not Stalled: %+v", refused.Status.Conditions)
	}

	f.entra.FailWith(http.StatusUnauthorized)
	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Interval.Duration = time.Second })
	f.checkAzureFailure(t, obj, got.Status.Artifact)
}

// TestBinaryOCIRepositoryProviderAzure: the built binary, with AKS's
// workload identity environment, pulls from an ACR host; Entra ID then
// answering 401 fails with Flux's reason and message, the artifact kept.
func TestBinaryOCIRepositoryProviderAzure(t *testing.T) {
	f := newAzureFixture(t)
	f.workloadIdentity(t)
	f.entra.SetTTL(6 * time.Second)
	f.acr.SetTTL(6 * time.Second)
	runBinaryShard(t, "binary-azure")
	ns := newNamespace(t)
	obj := f.repository(t, ns, "acr", "eddy.azurecr.io", "app", map[string]string{shardKey: "binary-azure"})
	got := waitOCIReady(t, obj)
	if files := untar(t, download(t, got.Status.Artifact)); string(files["a.yaml"]) != "a\n" {
		t.Errorf("artifact files %v, want the pushed a.yaml", keys(files))
	}
	if ex := f.acr.Exchanges(); len(ex) != 1 {
		t.Errorf("ACR exchanges %v, want one by the binary", ex)
	}
	f.entra.FailWith(http.StatusUnauthorized)
	update(t, obj, func(o *sourcev1.OCIRepository) { o.Spec.Interval.Duration = time.Second })
	f.checkAzureFailure(t, obj, got.Status.Artifact)
}
