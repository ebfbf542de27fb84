package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/bootstrap"
	"github.com/eddyops/eddy/cli/internal/bootstrap/fakegithub"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	gossh "golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BootstrapEnv is a local cluster (full profile: Deployments become
// Available on kwok nodes) with Eddy's CRDs and the four controllers
// running as processes, as `eddy dev` runs them but syncing nothing, and a
// Git HTTP server with basic auth serving an empty bare repository.
type BootstrapEnv struct {
	*user
	Env *dev.Env
	// Kubeconfig is the cluster's kubeconfig (also the user's KUBECONFIG).
	Kubeconfig string
	// Git serves Root; RepoURL is the empty repository's address, Bare its
	// directory; Username and Password are the server's credentials.
	Git                *gitserver.Server
	Root, Bare         string
	RepoURL            string
	Username, Password string
	Client             client.Client
}

// StartBootstrapEnv starts a BootstrapEnv for the test, stopped at its end.
func StartBootstrapEnv(t *testing.T) *BootstrapEnv {
	t.Helper()
	root, _ := built(t)
	u := newUser(t)
	env, err := dev.Start(context.Background(), dev.Options{
		Root: root, K8sBinDir: dev.K8sBinDir(root), StateDir: u.dir(), Fast: true,
		Progress: func(s string) { t.Log(s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop) // before newUser's cleanup: the state is gone when it looks
	b := &BootstrapEnv{user: u, Env: env, Kubeconfig: env.Cluster.KubeconfigPath, Client: env.Client,
		Root: t.TempDir(), Username: "eddy", Password: "s3cret-pw"}
	if b.Git, err = gitserver.Start(gitserver.Options{Root: b.Root, Username: b.Username, Password: b.Password}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Git.Close)
	b.Bare = b.NewBareRepo(t, "fleet.git")
	b.RepoURL = b.Git.URL + "/fleet.git"
	return b
}

// NewBareRepo creates an empty bare repository below Root that takes
// pushes over HTTP, and returns its directory.
func (b *BootstrapEnv) NewBareRepo(t *testing.T, name string) string {
	t.Helper()
	bare, err := gitserver.InitBare(b.Root, name)
	if err == nil {
		_, err = gitserver.Git(bare, "config", "http.receivepack", "true")
	}
	if err != nil {
		t.Fatal(err)
	}
	return bare
}

// BootstrapArgs are the arguments of `eddy bootstrap git` into the
// environment's repository at clusters/dev, the cluster using the same
// HTTP credentials (--token-auth, as flux needs for HTTP(S) sync), plus
// extra.
func (b *BootstrapEnv) BootstrapArgs(extra ...string) []string {
	return append([]string{"bootstrap", "git", "--url", b.RepoURL, "--allow-insecure-http",
		"--username", b.Username, "--password", b.Password, "--token-auth", "--path", "clusters/dev", "--silent"}, extra...)
}

// BootstrapCluster starts a BootstrapEnv and bootstraps it with the built
// bin/eddy into the empty repository (clusters/dev): when it returns, the
// Kustomization flux-system has applied the pushed commit. The real flux
// CLI's e2e test runs against it.
func BootstrapCluster(t *testing.T) *BootstrapEnv {
	t.Helper()
	b := StartBootstrapEnv(t)
	b.must(b.BootstrapArgs()...)
	return b
}

// head returns the branch's commit in a bare repository, "" when it has none.
func head(bare, branch string) string {
	h, err := gitserver.Git(bare, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return h
}

// TestBootstrapGitE2E drives the built bin/eddy against a local cluster
// with the controllers running and a real Git server: bad input (wrong
// password, a path outside the repository, plain HTTP not allowed, an
// unreachable cluster, an unconfirmed SSH deploy key) fails with one line
// and writes nothing; bootstrap
// into an empty repository pushes the three files in two commits with
// flux's messages, creates the Secret and ends with the cluster synced to
// the pushed commit; a second run makes no commit and says so; another
// --path or a foreign gotk-sync.yaml is refused; a newer --version is
// committed and synced (at a pseudo-terminal); `bootstrap github` against a
// fake GitHub creates the repository and moves the cluster to it.
func TestBootstrapGitE2E(t *testing.T) {
	b := StartBootstrapEnv(t)
	ctx := context.Background()

	t.Run("bad input pushes nothing", func(t *testing.T) {
		args := b.BootstrapArgs()
		wrongPw := slices.Clone(args)
		wrongPw[slices.Index(wrongPw, b.Password)] = "wrong-password"
		out := b.fails(wrongPw...)
		lastLineError(t, out, "authentication failed")
		if strings.Contains(out, "wrong-password") {
			t.Errorf("the error shows the password: %s", out)
		}
		oneLineError(t, b.fails(append(args, "--path", "../elsewhere")...), "outside the repository")
		noHTTP := slices.DeleteFunc(slices.Clone(args), func(s string) bool { return s == "--allow-insecure-http" })
		oneLineError(t, b.fails(noHTTP...), "--allow-insecure-http")
		dead := filepath.Join(t.TempDir(), "kubeconfig")
		kc, err := os.ReadFile(b.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		srv := b.Env.Cluster.Config.Host
		if err := os.WriteFile(dead, []byte(strings.ReplaceAll(string(kc), srv, "https://127.0.0.1:1")), 0o600); err != nil {
			t.Fatal(err)
		}
		oneLineError(t, b.fails(append(args, "--kubeconfig", dead)...), "cannot reach the cluster")
		// SSH without --private-key-file: a new deploy key is printed and,
		// unconfirmed (no answer on stdin), nothing is written.
		kp, err := bootstrap.GenerateKeyPair()
		if err != nil {
			t.Fatal(err)
		}
		authorized, _, _, _, _ := gossh.ParseAuthorizedKey(kp.PublicKey)
		sshSrv, err := gitserver.StartSSH(b.Root, authorized)
		if err != nil {
			t.Fatal(err)
		}
		defer sshSrv.Close()
		out = b.fails("bootstrap", "git", "--url", sshSrv.URL+"/fleet.git", "--path", "clusters/dev")
		lastLineError(t, out, "aborting")
		if !strings.Contains(out, "✔ public key: ecdsa-sha2-nistp384 ") {
			t.Errorf("no ECDSA P-384 deploy key printed:\n%s", out)
		}
		if h := head(b.Bare, "main"); h != "" {
			t.Fatalf("a failed bootstrap pushed %s", h)
		}
		if err := b.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("a failed bootstrap left the Secret flux-system (%v)", err)
		}
	})

	var first string
	t.Run("bootstrap an empty repository", func(t *testing.T) {
		out := b.must(b.BootstrapArgs()...)
		first = head(b.Bare, "main")
		if first == "" {
			t.Fatal("nothing pushed")
		}
		files, _ := gitserver.Git(b.Bare, "ls-tree", "-r", "--name-only", "main")
		if want := "clusters/dev/flux-system/gotk-components.yaml\nclusters/dev/flux-system/gotk-sync.yaml\nclusters/dev/flux-system/kustomization.yaml"; files != want {
			t.Errorf("files:\n%s\nwant:\n%s", files, want)
		}
		log, _ := gitserver.Git(b.Bare, "log", "--format=%an|%s", "main")
		if want := "Eddy|Add Eddy sync manifests\nEddy|Add Eddy " + builtVersion(t) + " component manifests"; log != want {
			t.Errorf("commits:\n%s\nwant:\n%s", log, want)
		}
		comps, _ := gitserver.Git(b.Bare, "show", "main:clusters/dev/flux-system/gotk-components.yaml")
		if !strings.HasPrefix(comps, "---\n# This manifest was generated by eddy. DO NOT EDIT.\n# Eddy Version: "+builtVersion(t)+"\n# Components: source-controller,kustomize-controller,helm-controller,notification-controller\n") {
			t.Errorf("gotk-components.yaml header:\n%s", firstLines(comps, 5))
		}
		sync, _ := gitserver.Git(b.Bare, "show", "main:clusters/dev/flux-system/gotk-sync.yaml")
		for _, want := range []string{"url: " + b.RepoURL, "path: ./clusters/dev", "interval: 1m0s", "interval: 10m0s", "branch: main", "prune: true"} {
			if !strings.Contains(sync, want) {
				t.Errorf("gotk-sync.yaml lacks %q:\n%s", want, sync)
			}
		}
		kus, _ := gitserver.Git(b.Bare, "show", "main:clusters/dev/flux-system/kustomization.yaml")
		if !strings.Contains(kus, "- gotk-components.yaml\n- gotk-sync.yaml") {
			t.Errorf("kustomization.yaml:\n%s", kus)
		}
		sec := &corev1.Secret{}
		if err := b.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, sec); err != nil {
			t.Fatal(err)
		}
		if string(sec.Data["username"]) != b.Username || string(sec.Data["password"]) != b.Password || len(sec.Data) != 2 {
			t.Errorf("Secret flux-system has keys %v", keysOf(sec.Data))
		}
		b.checkSynced(t, first)
		if !strings.Contains(out, "bootstrap finished") || strings.Contains(out, b.Password) {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("the real flux CLI", func(t *testing.T) { fluxOnBootstrapped(t, b, first) })

	t.Run("second run makes no commit", func(t *testing.T) {
		out := b.must(b.BootstrapArgs()...)
		if h := head(b.Bare, "main"); h != first {
			t.Fatalf("second run moved main to %s", h)
		}
		for _, want := range []string{"component manifests are up to date", "sync manifests are up to date", "already bootstrapped"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
	})

	t.Run("another path or a foreign gotk-sync.yaml is refused", func(t *testing.T) {
		oneLineError(t, b.fails(append(b.BootstrapArgs(), "--path", "clusters/other")...), `path "./clusters/dev"`)
		foreign := b.NewBareRepo(t, "foreign.git")
		work := t.TempDir()
		r := &gitserver.Repo{Name: "foreign.git", Work: work, Bare: foreign}
		if _, err := r.Git("init", "-q", "--initial-branch=main"); err != nil {
			t.Fatal(err)
		}
		own, err := r.Commit(map[string]string{"clusters/dev/flux-system/gotk-sync.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\n"}, "mine")
		if err != nil {
			t.Fatal(err)
		}
		args := b.BootstrapArgs()
		args[slices.Index(args, b.RepoURL)] = b.Git.URL + "/foreign.git"
		lastLineError(t, b.fails(args...), "gotk-sync.yaml", "not generated by eddy")
		if h := head(foreign, "main"); h != own {
			t.Errorf("the refused bootstrap pushed %s", h)
		}
		if h := head(b.Bare, "main"); h != first {
			t.Errorf("main moved to %s", h)
		}
	})

	t.Run("newer version upgrades through Git at a terminal", func(t *testing.T) {
		run := b.startTTY(100, false, b.BootstrapArgs("--version", "v9.9.9")...)
		lines := run.checkTerminal(3*time.Minute, false)
		screen := strings.Join(lines, "\n")
		for _, want := range []string{"✔ committed component manifests", "✔ sync manifests are up to date", "✔ Kustomization reconciled successfully", "✔ bootstrap finished"} {
			if !strings.Contains(screen, want) {
				t.Errorf("the terminal lacks %q", want)
			}
		}
		log, _ := gitserver.Git(b.Bare, "log", "-1", "--format=%s", "main")
		if log != "Add Eddy v9.9.9 component manifests" {
			t.Errorf("last commit %q", log)
		}
		b.checkSynced(t, head(b.Bare, "main"))
	})

	t.Run("github", func(t *testing.T) {
		fake, err := fakegithub.Start(t.TempDir(), "me", "gh-token")
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		args := []string{"bootstrap", "github", "--owner", "acme", "--repository", "fleet", "--token-auth", "--path", "clusters/dev", "--api-url", fake.URL}
		cmd := b.command(args...)
		cmd.Env = append(cmd.Env, "GITHUB_TOKEN=wrong")
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("a wrong token succeeded:\n%s", out)
		} else {
			lastLineError(t, string(out), "GITHUB_TOKEN")
		}
		// The cluster syncs clusters/dev: another path is refused before
		// GitHub is asked to create anything.
		other := append(slices.Clone(args[:len(args)-4]), "--path", "clusters/other", "--api-url", fake.URL)
		cmd = b.command(other...)
		cmd.Env = append(cmd.Env, "GITHUB_TOKEN=gh-token")
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("another path succeeded:\n%s", out)
		} else {
			lastLineError(t, string(out), `from path "./clusters/dev"`)
		}
		if _, ok := fake.Private("acme", "fleet"); ok {
			t.Error("a refused bootstrap created the repository acme/fleet")
		}
		cmd = b.command(args...)
		cmd.Env = append(cmd.Env, "GITHUB_TOKEN=gh-token")
		out, err := cmd.CombinedOutput()
		t.Logf("$ GITHUB_TOKEN=*** eddy %s\n%s", strings.Join(args, " "), out)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "gh-token") {
			t.Error("the output shows the token")
		}
		if private, ok := fake.Private("acme", "fleet"); !ok || !private {
			t.Errorf("repository acme/fleet: exists %v private %v (requests %v)", ok, private, fake.Requests())
		}
		bare := filepath.Join(fake.Root(), "acme", "fleet.git")
		log, _ := gitserver.Git(bare, "log", "--format=%s", "main")
		if log != "Add Eddy sync manifests\nAdd Eddy "+builtVersion(t)+" component manifests" {
			t.Errorf("commits:\n%s", log)
		}
		sec := &corev1.Secret{}
		if err := b.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}, sec); err != nil {
			t.Fatal(err)
		}
		if string(sec.Data["username"]) != "git" || string(sec.Data["password"]) != "gh-token" {
			t.Errorf("Secret flux-system: username %q", sec.Data["username"])
		}
		b.checkSynced(t, head(bare, "main"))
	})
}

// checkSynced checks GitRepository and Kustomization flux-system are Ready
// at main@sha1:<commit>.
func (b *BootstrapEnv) checkSynced(t *testing.T, commit string) {
	t.Helper()
	rev := "main@sha1:" + commit
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "flux-system", Name: "flux-system"}
	repo := &sourcev1.GitRepository{}
	ks := &kustomizev1.Kustomization{}
	if err := b.Client.Get(ctx, key, repo); err != nil {
		t.Fatal(err)
	}
	if err := b.Client.Get(ctx, key, ks); err != nil {
		t.Fatal(err)
	}
	if repo.Status.Artifact == nil || repo.Status.Artifact.Revision != rev || !apimeta.IsStatusConditionTrue(repo.Status.Conditions, meta.ReadyCondition) {
		t.Errorf("GitRepository flux-system: artifact %+v, conditions %+v; want Ready at %s", repo.Status.Artifact, repo.Status.Conditions, rev)
	}
	if ks.Status.LastAttemptedRevision != rev || ks.Status.LastAppliedRevision != rev || !apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition) {
		t.Errorf("Kustomization flux-system: applied %q attempted %q, conditions %+v; want Ready at %s",
			ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision, ks.Status.Conditions, rev)
	}
}

// lastLineError checks a bootstrap failure: flux-style progress lines, then
// one error line, the last, naming what to fix.
func lastLineError(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	errs := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "✗ ") {
			errs++
		}
	}
	last := lines[len(lines)-1]
	if errs != 1 || !strings.HasPrefix(last, "✗ ") {
		t.Errorf("want progress lines and one error line, the last, got:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("error %q does not mention %q", last, w)
		}
	}
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}
