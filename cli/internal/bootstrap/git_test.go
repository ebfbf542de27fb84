package bootstrap

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/eddyops/eddy/cli/internal/bootstrap/fakegithub"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/go-git/go-git/v5/plumbing/object"
	gossh "golang.org/x/crypto/ssh"
)

// Clone, Commit and Push against a real Git HTTP server with basic auth: an
// empty repository gets the branch, a second commit of the same content
// makes no commit, a push after the branch moved is ErrConflict, and wrong
// credentials, a missing branch or repository are one line each that
// names no secret.
func TestCloneCommitPush(t *testing.T) {
	srv, bare := pushableRepo(t, gitserver.Options{Username: "me", Password: "s3cret"})
	ctx := context.Background()
	remote := Remote{URL: srv.URL + "/fleet.git", Branch: "main", Username: "me", Password: "s3cret"}
	author := object.Signature{Name: "Eddy"}

	co, err := Clone(ctx, t.TempDir(), remote)
	if err != nil {
		t.Fatal(err)
	}
	if co.Head() != "" {
		t.Fatalf("empty repository has a head %s", co.Head())
	}
	h1, err := co.Commit(map[string]string{"a/b.yaml": "x: 1\n"}, "first", author)
	if err != nil || h1 == "" {
		t.Fatalf("Commit = %q, %v", h1, err)
	}
	if h, err := co.Commit(map[string]string{"a/b.yaml": "x: 1\n"}, "again", author); err != nil || h != "" {
		t.Fatalf("Commit of unchanged content = %q, %v; want no commit", h, err)
	}
	if err := co.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := gitserver.Git(bare, "rev-parse", "main"); got != h1 {
		t.Fatalf("remote main = %q, want %s", got, h1)
	}
	if got, _ := gitserver.Git(bare, "log", "-1", "--format=%an|%s"); got != "Eddy|first" {
		t.Errorf("remote commit = %q", got)
	}

	// Another clone moves the branch; the first clone's push conflicts.
	other, err := Clone(ctx, t.TempDir(), remote)
	if err != nil || other.Head() != h1 {
		t.Fatalf("second clone: %v (head %s)", err, other.Head())
	}
	if _, err := other.Commit(map[string]string{"c.yaml": "y: 2\n"}, "other", author); err != nil {
		t.Fatal(err)
	}
	if err := other.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := co.Commit(map[string]string{"d.yaml": "z: 3\n"}, "stale", author); err != nil {
		t.Fatal(err)
	}
	if err := co.Push(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("push of a stale clone = %v, want ErrConflict", err)
	}

	for name, c := range map[string]struct {
		remote Remote
		want   string
	}{
		"wrong password": {Remote{URL: remote.URL, Branch: "main", Username: "me", Password: "wrong-pw"}, "authentication failed"},
		"missing branch": {Remote{URL: remote.URL, Branch: "nope", Username: "me", Password: "s3cret"}, `branch "nope" not found`},
		"missing repo":   {Remote{URL: srv.URL + "/missing.git", Branch: "main", Username: "me", Password: "s3cret"}, "not found"},
	} {
		_, err := Clone(ctx, t.TempDir(), c.remote)
		if err == nil {
			t.Errorf("%s: clone succeeded", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || strings.Contains(msg, c.remote.Password) {
			t.Errorf("%s: error %q; want one line with %q and no password", name, msg, c.want)
		}
	}
}

// The GitHub part against the fake: a missing repository is created (as an
// org's, private), an existing one is only read; the deploy key is added
// read-only with flux's title, kept when equal and replaced when it changed.
func TestGitHubRepositoryAndDeployKey(t *testing.T) {
	fake, err := fakegithub.Start(t.TempDir(), "me", "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	c, err := NewGitHubClient("tok", "", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := ui.New(os.Stderr)
	gh := &GitHub{Client: c, Owner: "acme", Repo: "fleet", Private: true}
	url, err := gh.ReconcileRepository(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if want := fake.GitURL + "/acme/fleet.git"; url != want {
		t.Errorf("clone URL %q, want %q", url, want)
	}
	if private, ok := fake.Private("acme", "fleet"); !ok || !private {
		t.Errorf("repository acme/fleet: exists %v private %v", ok, private)
	}
	if _, err := gh.ReconcileRepository(ctx, u); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, r := range fake.Requests() {
		if r == "POST /orgs/acme/repos" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("%d creations, want 1: %v", creates, fake.Requests())
	}

	title := DeployKeyTitle("flux-system", "main", "flux-system", "./clusters/dev")
	k1, _ := GenerateKeyPair()
	for range 2 {
		if err := gh.ReconcileDeployKey(ctx, u, title, k1.PublicKey); err != nil {
			t.Fatal(err)
		}
	}
	keys := fake.Keys("acme", "fleet")
	if len(keys) != 1 || keys[0].Title != title || !keys[0].ReadOnly || keys[0].Key != strings.TrimSpace(string(k1.PublicKey)) {
		t.Fatalf("deploy keys %+v", keys)
	}
	k2, _ := GenerateKeyPair()
	if err := gh.ReconcileDeployKey(ctx, u, title, k2.PublicKey); err != nil {
		t.Fatal(err)
	}
	if keys := fake.Keys("acme", "fleet"); len(keys) != 1 || keys[0].Key != strings.TrimSpace(string(k2.PublicKey)) {
		t.Fatalf("deploy keys after a new key %+v", keys)
	}

	// A personal repository goes to POST /user/repos; a bad token is one line.
	personal := &GitHub{Client: c, Owner: "me", Repo: "mine", Personal: true}
	if _, err := personal.ReconcileRepository(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Private("me", "mine"); !ok {
		t.Error("personal repository not created")
	}
	bad, _ := NewGitHubClient("wrong", "", fake.URL)
	_, err = (&GitHub{Client: bad, Owner: "acme", Repo: "fleet"}).ReconcileRepository(ctx, u)
	if err == nil || !strings.Contains(err.Error(), "GITHUB_TOKEN") || strings.Contains(err.Error(), "\n") {
		t.Errorf("bad token: %v", err)
	}
}

// Over SSH: the server's host key is scanned into a known_hosts line, and
// a clone with a private key pinned to it commits and pushes; a clone
// pinned to another host key is refused.
func TestCloneOverSSH(t *testing.T) {
	root := t.TempDir()
	bare, err := gitserver.InitBare(root, "fleet.git")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(kp.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.StartSSH(root, pub)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	host := strings.TrimPrefix(srv.URL, "ssh://git@")
	kh, err := ScanHostKey(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	if string(kh) != strings.TrimSpace(string(srv.KnownHosts)) {
		t.Errorf("scanned %q, want %q", kh, srv.KnownHosts)
	}
	remote := Remote{URL: srv.URL + "/fleet.git", Branch: "main", PrivateKey: kp.PrivateKey, KnownHosts: kh}
	co, err := Clone(ctx, t.TempDir(), remote)
	if err != nil {
		t.Fatal(err)
	}
	h, err := co.Commit(map[string]string{"x.yaml": "a: 1\n"}, "over ssh", object.Signature{Name: "Eddy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := co.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := gitserver.Git(bare, "rev-parse", "main"); got != h {
		t.Errorf("remote main %q, want %s", got, h)
	}
	other, _ := GenerateKeyPair()
	otherPub := strings.TrimSpace(string(other.PublicKey))
	remote.KnownHosts = []byte(host + " " + otherPub)
	if _, err := Clone(ctx, t.TempDir(), remote); err == nil {
		t.Error("a clone pinned to another host key succeeded")
	}
}

// pushableRepo starts a Git HTTP server (opts, in a test directory) with an
// empty bare repository fleet.git that accepts pushes; it stops with t.
func pushableRepo(t *testing.T, opts gitserver.Options) (*gitserver.Server, string) {
	t.Helper()
	opts.Root = t.TempDir()
	srv, err := gitserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	bare, err := gitserver.InitBare(opts.Root, "fleet.git")
	if err == nil {
		_, err = gitserver.Git(bare, "config", "http.receivepack", "true")
	}
	if err != nil {
		t.Fatal(err)
	}
	return srv, bare
}
