package controller

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// githubAppFixture is a fake GitHub API issuing token to one App and a Git
// server that takes only that token (user x-access-token).
type githubAppFixture struct {
	api    *cloudfake.GitHub
	git    *gitserver.Server
	url    string
	root   string
	secret map[string]string
	token  string
}

func newGitHubAppFixture(t *testing.T, r *repo) *githubAppFixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &githubAppFixture{token: "ghs_" + strings.Repeat("s3cret", 6)}
	f.api = cloudfake.StartGitHub(31337, 4242, "", &key.PublicKey, f.token)
	t.Cleanup(f.api.Close)
	root := t.TempDir()
	f.root = root
	if _, err := gitserver.InitBare(root, "app.git"); err != nil {
		t.Fatal(err)
	}
	r.MustGit(t, "push", "-q", filepath.Join(root, "app.git"), "main")
	if f.git, err = gitserver.Start(gitserver.Options{Root: root, Username: "x-access-token", Password: f.token}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.git.Close)
	f.url = f.git.URL + "/app.git"
	f.secret = map[string]string{"githubAppID": "31337", "githubAppInstallationID": "4242", "githubAppBaseURL": f.api.URL,
		"githubAppPrivateKey": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))}
	return f
}

// checkFetchedWithToken checks that the Git server was fetched from with
// the installation token as basic auth, and that neither the token nor
// the key shows in the object's status.
func (f *githubAppFixture) checkFetchedWithToken(t *testing.T, got *sourcev1.GitRepository) {
	t.Helper()
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+f.token))
	fetched := false
	for _, req := range f.git.Requests() {
		fetched = fetched || (req.Fetch && req.Status == 200 && req.Authorization == want)
	}
	if !fetched {
		t.Errorf("no fetch with the installation token reached the Git server: %+v", f.git.Requests())
	}
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, "s3cret") || strings.Contains(c.Message, "PRIVATE") {
			t.Errorf("condition %s carries a secret: %q", c.Type, c.Message)
		}
	}
}

// TestGitHubAppProviderClonesWithTheInstallationToken: provider github
// signs a JWT with the App's key, buys an installation token at
// githubAppBaseURL and clones with it; the token is reused, not bought
// again, on the next reconcile.
func TestGitHubAppProviderClonesWithTheInstallationToken(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	f := newGitHubAppFixture(t, r)
	obj := newRepositoryWithSecret(t, ns, "app", f.url, f.secret)
	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Provider = sourcev1.GitProviderGitHub })
	got := waitReady(t, obj)
	f.checkFetchedWithToken(t, got)
	for _, ev := range sink.find(ns, "app", "NewArtifact") {
		if strings.Contains(ev.Message, "s3cret") {
			t.Errorf("event carries the token: %q", ev.Message)
		}
	}
	// A new commit, then a spec change for a reconcile now.
	head := r.MustCommit(t, map[string]string{"app.yaml": "a: 2\n"}, "two")
	r.MustGit(t, "push", "-q", filepath.Join(f.root, "app.git"), "main")
	update(t, obj, func(o *sourcev1.GitRepository) { o.Spec.Interval = metav1.Duration{Duration: 2 * time.Hour} })
	got = waitFor(t, obj, "the new commit", func(o *sourcev1.GitRepository) bool {
		return o.Status.Artifact != nil && o.Status.Artifact.Revision == "main@sha1:"+head
	})
	if n := f.api.Issued(); n != 1 {
		t.Errorf("%d installation tokens bought for two fetches, want 1 (cached)", n)
	}
}

// TestGitHubProviderWithoutAppDataFails: Flux's messages for provider
// github without spec.secretRef (stalled) and with a Secret lacking
// githubAppID.
func TestGitHubProviderWithoutAppDataFails(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"app.yaml": "a"})
	const msg = "secretRef with github app data must be specified when provider is set to github"
	noRef := waitNotReady(t, newGitRepository(t, ns, "no-ref", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Provider = sourcev1.GitProviderGitHub
	}))
	noData := newRepositoryWithSecret(t, ns, "no-data", r.URL(), map[string]string{"username": "u", "password": "p"})
	update(t, noData, func(o *sourcev1.GitRepository) { o.Spec.Provider = sourcev1.GitProviderGitHub })
	got := waitNotReady(t, noData)
	for _, c := range []struct {
		o       *sourcev1.GitRepository
		stalled bool
	}{{noRef, true}, {got, false}} {
		fetch := apimeta.FindStatusCondition(c.o.Status.Conditions, sourcev1.FetchFailedCondition)
		if fetch == nil || fetch.Reason != sourcev1.InvalidProviderConfigReason || fetch.Message != msg ||
			apimeta.IsStatusConditionTrue(c.o.Status.Conditions, meta.StalledCondition) != c.stalled {
			t.Errorf("%s: conditions %+v, want FetchFailed %s %q, Stalled %v", c.o.Name, c.o.Status.Conditions,
				sourcev1.InvalidProviderConfigReason, msg, c.stalled)
		}
	}
}
