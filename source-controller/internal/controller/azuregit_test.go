package controller

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// devOpsServer is a Git server that takes only token as a bearer token,
// as Azure Repos takes an Entra ID token of Azure DevOps' scope.
func devOpsServer(t *testing.T, r *repo, token string) *gitserver.Server {
	t.Helper()
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "app.git"); err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", filepath.Join(root, "app.git"), "main")
	srv, err := gitserver.Start(gitserver.Options{Root: root, BearerToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// recordingProxy forwards every request and records the hosts it saw.
type recordingProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRecordingProxy(t *testing.T) *recordingProxy {
	t.Helper()
	p := &recordingProxy{}
	fwd := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL = pr.In.URL }}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Host)
		p.mu.Unlock()
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *recordingProxy) saw(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.seen {
		if h == host {
			return true
		}
	}
	return false
}

// checkBearerFetch checks that the Git server was fetched from with token
// as bearer and that no condition carries it.
func checkBearerFetch(t *testing.T, srv *gitserver.Server, got *sourcev1.GitRepository, token string) {
	t.Helper()
	fetched := false
	for _, req := range srv.Requests() {
		fetched = fetched || (req.Fetch && req.Status == 200 && req.Authorization == "Bearer "+token)
	}
	if !fetched {
		t.Errorf("no fetch with the Azure DevOps token reached the Git server: %+v", srv.Requests())
	}
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, token) {
			t.Errorf("condition %s carries the token: %q", c.Type, c.Message)
		}
	}
}

// TestGitRepositoryProviderAzureClonesWithTheDevOpsToken: provider azure
// clones with the managed identity's token of Azure DevOps' scope, from
// the instance metadata service (never through spec.proxySecretRef's
// proxy), as a bearer token. Entra ID answering 401 to a workload identity
// fails with Flux's reason and message; a service account is refused
// (Stalled).
func TestGitRepositoryProviderAzureClonesWithTheDevOpsToken(t *testing.T) {
	imds := cloudfake.StartIMDS("")
	defer imds.Close()
	for k, v := range map[string]string{"AZURE_CLIENT_ID": "", "AZURE_TENANT_ID": "", "AZURE_FEDERATED_TOKEN_FILE": "",
		"AZURE_AUTHORITY_HOST": "", "AZURE_POD_IDENTITY_AUTHORITY_HOST": imds.URL} {
		t.Setenv(k, v)
	}
	ns := newNamespace(t)
	token := imds.TokenFor(cloudauth.ScopeAzureDevOps)
	srv := devOpsServer(t, newRepo(t, map[string]string{"app.yaml": "a: 1\n"}), token)
	url := srv.URL + "/app.git"
	proxy := newRecordingProxy(t)
	createSecret(t, ns, "proxy", map[string]string{"address": proxy.URL})
	obj := newGitRepository(t, ns, "app", url, func(o *sourcev1.GitRepository) {
		o.Spec.Provider = sourcev1.GitProviderAzure
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	})
	checkBearerFetch(t, srv, waitReady(t, obj), token)
	if scopes := imds.Issued(); len(scopes) != 1 || scopes[0] != cloudauth.ScopeAzureDevOps {
		t.Errorf("IMDS tokens for %v, want one for Azure DevOps", scopes)
	}
	if proxy.saw(strings.TrimPrefix(imds.URL, "http://")) {
		t.Errorf("the instance metadata service was asked through the proxy")
	}

	tenant := newGitRepository(t, ns, "tenant", url, func(o *sourcev1.GitRepository) {
		o.Spec.Provider = sourcev1.GitProviderAzure
		o.Spec.ServiceAccountName = "tenant"
	})
	refused := waitNotReady(t, tenant)
	fetch := apimeta.FindStatusCondition(refused.Status.Conditions, sourcev1.FetchFailedCondition)
	if fetch == nil || fetch.Reason != meta.FeatureGateDisabledReason ||
		!strings.HasPrefix(fetch.Message, "spec.serviceAccountName with provider 'azure' is not supported") ||
		!apimeta.IsStatusConditionTrue(refused.Status.Conditions, meta.StalledCondition) {
		t.Errorf("conditions %+v, want Stalled, FetchFailed %s", refused.Status.Conditions, meta.FeatureGateDisabledReason)
	}

	f := newAzureFixture(t)
	f.workloadIdentity(t)
	f.entra.FailWith(http.StatusUnauthorized)
	bad := waitNotReady(t, newGitRepository(t, ns, "denied", url, func(o *sourcev1.GitRepository) {
		o.Spec.Provider = sourcev1.GitProviderAzure
	}))
	want := "failed to configure authentication options: failed to get access token for Git repository: " +
		"WorkloadIdentityCredential authentication failed: POST " + f.entra.URL + "tenant-eddy/oauth2/v2.0/token: " +
		"401 Unauthorized: invalid_client (AADSTS700016)"
	fetch = apimeta.FindStatusCondition(bad.Status.Conditions, sourcev1.FetchFailedCondition)
	if fetch == nil || fetch.Reason != sourcev1.AuthenticationFailedReason || fetch.Message != want {
		t.Errorf("conditions %+v, want FetchFailed %s %q", bad.Status.Conditions, sourcev1.AuthenticationFailedReason, want)
	}
}

// TestBinaryGitRepositoryProviderAzure: the built binary, with AKS's
// workload identity environment, clones with the Entra ID token of Azure
// DevOps' scope as a bearer token, asked through spec.proxySecretRef's
// proxy.
func TestBinaryGitRepositoryProviderAzure(t *testing.T) {
	f := newAzureFixture(t)
	f.workloadIdentity(t)
	runBinaryShard(t, "binary-azure-git")
	ns := newNamespace(t)
	token := f.entra.TokenFor(cloudauth.ScopeAzureDevOps)
	srv := devOpsServer(t, newRepo(t, map[string]string{"app.yaml": "a: 1\n"}), token)
	url := srv.URL + "/app.git"
	createSecret(t, ns, "proxy", map[string]string{"address": f.proxy.URL})
	obj := newGitRepository(t, ns, "app", url, func(o *sourcev1.GitRepository) {
		o.Labels = map[string]string{shardKey: "binary-azure-git"}
		o.Spec.Provider = sourcev1.GitProviderAzure
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	})
	got := waitReady(t, obj)
	checkBearerFetch(t, srv, got, token)
	if files := untar(t, download(t, got.Status.Artifact)); string(files["app.yaml"]) != "a: 1\n" {
		t.Errorf("artifact files %v, want app.yaml", keys(files))
	}
	if f.viaProxy(f.entraHost()) != 1 {
		t.Errorf("proxied %v, want Entra ID's one request", f.seen)
	}
}
