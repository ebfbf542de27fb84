package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSparseCheckout keeps only the listed directories in the artifact and
// fails with a clear message for a directory the commit lacks.
func TestSparseCheckout(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"apps/a.yaml": "a", "infra/b.yaml": "b", "docs/c.md": "c", "top.yaml": "t"})
	got := waitReady(t, newGitRepository(t, ns, "sparse", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.SparseCheckout = []string{"./apps", "infra"}
	}))
	files := keys(untar(t, download(t, got.Status.Artifact)))
	if len(files) != 2 || files[0] != "apps/a.yaml" || files[1] != "infra/b.yaml" {
		t.Errorf("sparse artifact files %v, want apps/a.yaml and infra/b.yaml", files)
	}
	bad := waitNotReady(t, newGitRepository(t, ns, "sparse-missing", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.SparseCheckout = []string{"nope"}
	}))
	c := apimeta.FindStatusCondition(bad.Status.Conditions, meta.ReadyCondition)
	if c.Reason != sourcev1.GitOperationFailedReason || !strings.Contains(c.Message, `sparse checkout directory "nope" does not exist`) {
		t.Errorf("Ready %s %q", c.Reason, c.Message)
	}
}

// TestProxy reaches the Git server through the HTTP proxy named by
// spec.proxySecretRef.
func TestProxy(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a"})
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		proxied.Add(1)
		// The proxy knows the name git.example.internal, which only it can resolve.
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			out := *req.URL
			out.Host = "127.0.0.1:" + out.Port()
			pr.Out.URL = &out
		}}).ServeHTTP(w, req)
	}))
	defer proxy.Close()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: ns}, StringData: map[string]string{"address": proxy.URL}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	url := "http://git.example.internal:" + portOf(gitSrv.URL) + "/" + r.Name
	got := waitReady(t, newGitRepository(t, ns, "proxied", url, func(o *sourcev1.GitRepository) {
		o.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
	}))
	download(t, got.Status.Artifact)
	if proxied.Load() == 0 {
		t.Error("no request went through the proxy")
	}
}

// TestProviderIsRefused stalls a GitRepository whose spec.provider asks
// for credentials Eddy does not get (aws: CodeCommit), instead of cloning
// anonymously.
func TestProviderIsRefused(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a"})
	got := waitNotReady(t, newGitRepository(t, ns, "provider", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Provider = sourcev1.GitProviderAWS
	}))
	if got.Status.Artifact != nil {
		t.Error("an artifact was produced without the requested provider's credentials")
	}
	const msg = "provider 'aws' is not supported: use 'generic' with spec.secretRef"
	fetch := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.FetchFailedCondition)
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.StalledCondition) || fetch == nil ||
		fetch.Status != metav1.ConditionTrue || fetch.Reason != sourcev1.InvalidProviderConfigReason || fetch.Message != msg {
		t.Errorf("conditions %+v, want Stalled=True and FetchFailed=True %s %q", got.Status.Conditions, sourcev1.InvalidProviderConfigReason, msg)
	}
}

func portOf(raw string) string {
	u, _ := neturl.Parse(raw)
	return u.Port()
}

// TestArtifactServerTimeouts: the artifact server bounds the request header
// and idle keep-alive connections (Flux sc v1.10.1) but not the whole
// request, so slow downloads of large artifacts still finish.
func TestArtifactServerTimeouts(t *testing.T) {
	srv := artifactServer(":9090", http.NotFoundHandler())
	if srv.ReadHeaderTimeout != 10*time.Second || srv.IdleTimeout != 90*time.Second {
		t.Errorf("artifact server read-header timeout %v, idle timeout %v; want 10s and 90s", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("artifact server read timeout %v, write timeout %v; want none", srv.ReadTimeout, srv.WriteTimeout)
	}
}
