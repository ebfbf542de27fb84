package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// submodule is one entry of a .gitmodules file and its gitlink.
type submodule struct{ name, path, url, commit string }

// commitSubmodules commits a .gitmodules of subs and their gitlinks (no
// clone of them is needed) to r, pushes it to main and returns the commit.
func commitSubmodules(t *testing.T, r *gitserver.Repo, subs ...submodule) string {
	t.Helper()
	var b strings.Builder
	for _, s := range subs {
		fmt.Fprintf(&b, "[submodule %q]\n\tpath = %s\n\turl = %s\n", s.name, s.path, s.url)
	}
	if err := os.WriteFile(filepath.Join(r.Work, ".gitmodules"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Work, "app.yaml"), []byte("app: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := [][]string{{"add", ".gitmodules", "app.yaml"}}
	for _, s := range subs {
		steps = append(steps, []string{"update-index", "--add", "--cacheinfo", "160000," + s.commit + "," + s.path})
	}
	steps = append(steps, []string{"commit", "-q", "-m", "submodules"}, []string{"push", "-q", "--force", r.Bare, "HEAD:main"})
	for _, args := range steps {
		if _, err := r.Git(args...); err != nil {
			t.Fatal(err)
		}
	}
	head, err := r.Git("rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return head
}

// serveRepo starts a Git server with opts over a new root holding one
// repository, name, whose main branch has files; it returns the server,
// the repository and its commit.
func serveRepo(t *testing.T, opts gitserver.Options, name string, files map[string]string) (*gitserver.Server, *gitserver.Repo, string) {
	t.Helper()
	opts.Root = t.TempDir()
	srv, err := gitserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r, err := gitserver.NewRepo(opts.Root, name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Commit(files, "initial commit")
	if err != nil {
		t.Fatal(err)
	}
	return srv, r, head
}

// authorizations lists the distinct Authorization headers srv received.
func authorizations(srv *gitserver.Server) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range srv.Requests() {
		if !seen[r.Authorization] {
			seen[r.Authorization] = true
			out = append(out, r.Authorization)
		}
	}
	return out
}

// TestBinarySubmoduleCredentialsStayOnTheirHost runs the built
// source-controller on GitRepositories with recurseSubmodules whose parent
// is on server A (HTTPS, private CA, token or basic auth): a submodule on
// another host (plain HTTP, "localhost" rather than A's 127.0.0.1) never
// receives the credentials, and is fetched anonymously when public or
// fails naming it when private; a relative submodule on A gets them; a
// file:// URL and a local path are refused naming the submodule, with no
// path of the controller's machine in the message.
func TestBinarySubmoduleCredentialsStayOnTheirHost(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=submodules", "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")

	a, shared, sharedHead := serveRepo(t, gitserver.Options{TLS: true, BearerToken: "tok-A", Username: "git", Password: "pw-A"},
		"shared.git", map[string]string{"shared.yaml": "from: a\n"})
	b, lib, libHead := serveRepo(t, gitserver.Options{}, "lib.git", map[string]string{"lib.yaml": "from: b\n"})
	c, _, privHead := serveRepo(t, gitserver.Options{Username: "git", Password: "pw-C"}, "priv.git", map[string]string{"priv.yaml": "from: c\n"})
	elsewhere := func(srv *gitserver.Server, name string) string {
		return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/" + name
	}
	// Each submodule has one of its own, next to it: a nested one keeps
	// its parent's host, and gets the credentials only on A.
	for _, n := range []struct {
		r    *gitserver.Repo
		head *string
	}{{shared, &sharedHead}, {lib, &libHead}} {
		deep, err := gitserver.NewRepo(filepath.Dir(n.r.Bare), "deep.git", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		deepHead, err := deep.Commit(map[string]string{"deep.yaml": "deep: " + n.r.Bare + "\n"}, "deep")
		if err != nil {
			t.Fatal(err)
		}
		*n.head = commitSubmodules(t, n.r, submodule{"deep", "nested/deep", "../deep.git", deepHead})
	}
	parent := func(name string, subs ...submodule) string {
		r, err := gitserver.NewRepo(filepath.Dir(shared.Bare), name, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		commitSubmodules(t, r, subs...)
		return a.URL + "/" + name
	}
	ns := newNamespace(t)
	create := func(name, url string, creds map[string]string) *sourcev1.GitRepository {
		data := map[string]string{"ca.crt": string(a.CACert())}
		for k, v := range creds {
			data[k] = v
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
		if err := env.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		return newGitRepository(t, ns, name, url, func(o *sourcev1.GitRepository) {
			o.Labels = map[string]string{shardKey: "submodules"} // the binary's, not the in-process reconciler's
			o.Spec.SecretRef = &meta.LocalObjectReference{Name: name}
			o.Spec.RecurseSubmodules = true
		})
	}
	token := map[string]string{"bearerToken": "tok-A"}
	basic := map[string]string{"username": "git", "password": "pw-A"}

	mixed := parent("mixed.git",
		submodule{"public-lib", "vendor/public", elsewhere(b, "lib.git"), libHead},
		submodule{"shared", "vendor/shared", "../shared.git", sharedHead})
	for _, tc := range []struct {
		name  string
		creds map[string]string
	}{{"token", token}, {"basic", basic}} {
		t.Run("public submodule elsewhere and relative one with "+tc.name, func(t *testing.T) {
			got := waitReady(t, create("mixed-"+tc.name, mixed, tc.creds))
			files := untar(t, download(t, got.Status.Artifact))
			if string(files["vendor/public/lib.yaml"]) != "from: b\n" || string(files["vendor/shared/shared.yaml"]) != "from: a\n" ||
				string(files["vendor/public/nested/deep/deep.yaml"]) != "deep: "+lib.Bare+"\n" ||
				string(files["vendor/shared/nested/deep/deep.yaml"]) != "deep: "+shared.Bare+"\n" {
				t.Errorf("artifact files %v lack a submodule's content", keys(files))
			}
		})
	}
	if got := authorizations(b); len(got) != 1 || got[0] != "" || b.Fetches("lib.git") == 0 || b.Fetches("deep.git") == 0 {
		t.Errorf("server B received Authorization %q and %d, %d fetches of lib.git, deep.git; want none and fetches",
			got, b.Fetches("lib.git"), b.Fetches("deep.git"))
	}
	for _, repo := range []string{"shared.git", "deep.git"} {
		seen := map[string]bool{}
		for _, r := range a.Requests() {
			if strings.HasPrefix(r.Path, "/"+repo+"/") && r.Status == 200 {
				seen[r.Authorization] = true
			}
		}
		if !seen["Bearer tok-A"] || !seen["Basic Z2l0OnB3LUE="] {
			t.Errorf("%s on A was answered with Authorization %v; want the GitRepository's token and its basic auth", repo, seen)
		}
	}

	refused := []struct{ name, url, path, why string }{
		{"private-elsewhere", elsewhere(c, "priv.git"), "vendor/private", "authentication required"},
		{"file-url", "file://" + lib.Bare, "vendor/local", "file://"},
		{"local-path", lib.Bare, "vendor/local", "local path"},
	}
	for _, tc := range refused {
		t.Run(tc.name+" fails naming the submodule", func(t *testing.T) {
			head := libHead
			if tc.name == "private-elsewhere" {
				head = privHead
			}
			got := waitNotReady(t, create(tc.name, parent(tc.name+".git", submodule{"sub", tc.path, tc.url, head}), token))
			msg := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition).Message
			t.Logf("Ready message: %s", msg)
			if !strings.Contains(msg, "submodule '"+tc.path+"'") || !strings.Contains(msg, tc.why) {
				t.Errorf("Ready message %q does not name submodule '%s' and %q", msg, tc.path, tc.why)
			}
			if strings.Contains(msg, lib.Bare) || strings.Contains(msg, os.TempDir()) {
				t.Errorf("Ready message %q carries a local path", msg)
			}
		})
	}
	if got := authorizations(c); len(got) != 1 || got[0] != "" {
		t.Errorf("server C received Authorization %q; want none", got)
	}
}
