package gitserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/gitserver"
)

func newRepo(t *testing.T, root string) (work, head string) {
	t.Helper()
	if _, err := gitserver.InitBare(root, "app.git"); err != nil {
		t.Fatal(err)
	}
	work = t.TempDir()
	must(t, work, "init", "-q", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(work, "app.yaml"), []byte("kind: ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, work, "add", ".")
	must(t, work, "commit", "-q", "-m", "first")
	must(t, work, "push", "-q", filepath.Join(root, "app.git"), "main")
	return work, must(t, work, "rev-parse", "HEAD")
}

func must(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestServesCloneAndCountsFetches(t *testing.T) {
	root := t.TempDir()
	_, head := newRepo(t, root)
	srv, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	refs := must(t, t.TempDir(), "ls-remote", srv.URL+"/app.git")
	if !strings.Contains(refs, head+"\trefs/heads/main") {
		t.Fatalf("ls-remote: %q lacks %s refs/heads/main", refs, head)
	}
	if n := srv.Fetches("app.git"); n != 0 {
		t.Errorf("a ref listing counted as %d fetches", n)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	must(t, t.TempDir(), "clone", "-q", srv.URL+"/app.git", clone)
	if got := must(t, clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("cloned HEAD %s, want %s", got, head)
	}
	if n := srv.Fetches("app.git"); n != 1 {
		t.Errorf("one clone counted as %d fetches", n)
	}
}

func TestAuthentication(t *testing.T) {
	root := t.TempDir()
	newRepo(t, root)
	srv, err := gitserver.Start(gitserver.Options{Root: root, Username: "git", Password: "s3cret", BearerToken: "tok3n", TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, srv.CACert(), 0o600); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	dir := t.TempDir()
	t.Setenv("GIT_SSL_CAINFO", ca)
	lsRemote := func(url string, extra ...string) error {
		_, err := gitserver.Git(dir, append(extra, "ls-remote", url)...)
		return err
	}
	if err := lsRemote(srv.URL + "/app.git"); err == nil {
		t.Error("anonymous access accepted")
	}
	if err := lsRemote("https://git:wrong@" + host + "/app.git"); err == nil {
		t.Error("a wrong password accepted")
	}
	if err := lsRemote("https://git:s3cret@" + host + "/app.git"); err != nil {
		t.Errorf("basic auth refused: %v", err)
	}
	if err := lsRemote(srv.URL+"/app.git", "-c", "http.extraHeader=Authorization: Bearer tok3n"); err != nil {
		t.Errorf("bearer token refused: %v", err)
	}
	var seen []string
	for _, r := range srv.Requests() {
		seen = append(seen, r.Authorization)
	}
	if len(seen) == 0 || seen[0] != "" || seen[len(seen)-1] != "Bearer tok3n" {
		t.Errorf("recorded Authorization headers %q: want the first (anonymous) empty and the last the bearer token", seen)
	}
	if err := os.WriteFile(ca, unrelatedCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := lsRemote("https://git:s3cret@" + host + "/app.git"); err == nil {
		t.Error("TLS without the server's CA accepted")
	}
}

// unrelatedCA returns a freshly generated self-signed certificate.
func unrelatedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "unrelated"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestListensOnTheGivenAddress(t *testing.T) {
	root := t.TempDir()
	_, head := newRepo(t, root)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := gitserver.Start(gitserver.Options{Root: root, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.URL != "http://"+addr {
		t.Errorf("URL %s; want http://%s", srv.URL, addr)
	}
	if refs := must(t, t.TempDir(), "ls-remote", srv.URL+"/app.git"); !strings.Contains(refs, head) {
		t.Errorf("ls-remote at %s: %q lacks %s", addr, refs, head)
	}
	if _, err := gitserver.Start(gitserver.Options{Root: root, Addr: addr}); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("a second server on %s: %v; want address already in use", addr, err)
	}
}

// A work tree served through a symlink (as eddy dev serves a user's
// repository) refuses pushes by default; with http.receivepack and
// receive.denyCurrentBranch=updateInstead given as Config it takes them,
// its checked-out files follow the pushed commit, its own config stays
// unwritten and OnPush names it; a dirty work tree refuses the push with
// Git's own message.
func TestPushToAServedWorkTreeWithConfigFromTheEnvironment(t *testing.T) {
	user := t.TempDir()
	must(t, user, "init", "-q", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(user, "app.yaml"), []byte("v: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, user, "add", ".")
	must(t, user, "commit", "-q", "-m", "first")
	configBefore, err := os.ReadFile(filepath.Join(user, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(user, filepath.Join(root, "app")); err != nil {
		t.Fatal(err)
	}
	plain, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pushed := make(chan string, 4)
	srv, err := gitserver.Start(gitserver.Options{Root: root,
		Config: []string{"http.receivepack=true", "receive.denyCurrentBranch=updateInstead"},
		OnPush: func(path string) { pushed <- path }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	clone := t.TempDir()
	must(t, clone, "clone", "-q", srv.URL+"/app", ".")
	if err := os.WriteFile(filepath.Join(clone, "app.yaml"), []byte("v: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, clone, "commit", "-q", "-am", "second")
	if out, err := gitserver.Git(clone, "push", "-q", plain.URL+"/app", "main"); err == nil {
		t.Fatalf("the default server took a push: %s", out)
	}
	must(t, clone, "push", "-q", "origin", "main")
	if got := <-pushed; got != "app" {
		t.Errorf("OnPush got %q, want app", got)
	}
	if data, _ := os.ReadFile(filepath.Join(user, "app.yaml")); string(data) != "v: 2\n" {
		t.Errorf("the work tree's app.yaml after the push: %q", data)
	}
	if status := must(t, user, "status", "--porcelain"); status != "" {
		t.Errorf("the work tree after the push is not clean: %q", status)
	}
	if after, _ := os.ReadFile(filepath.Join(user, ".git", "config")); string(after) != string(configBefore) {
		t.Errorf("the served repository's config was written:\n%s", after)
	}

	if err := os.WriteFile(filepath.Join(user, "app.yaml"), []byte("v: edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "app.yaml"), []byte("v: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, clone, "commit", "-q", "-am", "third")
	out, err := gitserver.Git(clone, "push", "origin", "main")
	if err == nil || !strings.Contains(err.Error()+out, "Working directory has unstaged changes") {
		t.Errorf("a push into a dirty work tree: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(filepath.Join(user, "app.yaml")); string(data) != "v: edited\n" {
		t.Errorf("the refused push changed the work tree: %q", data)
	}
}
