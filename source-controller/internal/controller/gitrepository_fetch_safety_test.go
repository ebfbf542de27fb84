package controller

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIncludeRefusesSymlinkedToPath stops an include whose toPath goes
// through a symbolic link committed to the repository, which would make the
// copy write outside the checkout.
func TestIncludeRefusesSymlinkedToPath(t *testing.T) {
	ns := newNamespace(t)
	victim := t.TempDir()
	if err := os.MkdirAll(filepath.Join(victim, "prod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "prod", "precious.txt"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	lib := newRepo(t, map[string]string{"base/evil.yaml": "x"})
	waitReady(t, newGitRepository(t, ns, "lib", lib.URL(), nil))
	app := newRepo(t, map[string]string{"app.yaml": "a"})
	rel, _ := filepath.Rel(os.TempDir(), victim)
	if err := os.Symlink("../"+strings.Repeat("../", strings.Count(rel, "/"))+rel, filepath.Join(app.Work, "vendor")); err != nil {
		t.Fatal(err)
	}
	app.MustCommit(t, map[string]string{}, "symlink")
	got := waitNotReady(t, newGitRepository(t, ns, "app", app.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}, FromPath: "base", ToPath: "vendor/prod"}}
	}))
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); !strings.Contains(c.Message, "symbolic link") {
		t.Errorf("Ready %q, want the symbolic link named", c.Message)
	}
	if data, err := os.ReadFile(filepath.Join(victim, "prod", "precious.txt")); err != nil || string(data) != "keep" {
		t.Fatalf("a file outside the checkout was removed or changed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(victim, "prod", "evil.yaml")); err == nil {
		t.Fatal("a file was written outside the checkout")
	}
}

// TestIncludeCycleStalls refuses includes that lead back to the object.
func TestIncludeCycleStalls(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"a.yaml": "a"})
	waitReady(t, newGitRepository(t, ns, "a", r.URL(), nil))
	b := waitReady(t, newGitRepository(t, ns, "b", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "a"}}}
	}))
	_ = b
	a := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}
	update(t, a, func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "b"}}}
	})
	got := waitFor(t, a, "Stalled", func(o *sourcev1.GitRepository) bool {
		return apimeta.IsStatusConditionTrue(o.Status.Conditions, meta.StalledCondition)
	})
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); !strings.Contains(c.Message, "cycle") {
		t.Errorf("Ready %q, want the cycle named", c.Message)
	}
}

// TestInvalidURLDoesNotLeakCredentials keeps credentials out of the
// message of a URL that does not parse: a password, and beyond SSH the
// whole user part, which is often a token (https://<token>@github.com);
// an SSH login name, which the user needs to recognise the URL, is kept.
func TestInvalidURLDoesNotLeakCredentials(t *testing.T) {
	ns := newNamespace(t)
	for _, c := range []struct{ name, url, want string }{
		{"password", "http://user:s3cret@127.0.0.1:notaport/x.git", "'http://xxxxx@127.0.0.1:notaport/x.git'"},
		{"token-as-user", "https://ghp_s3cretToken0123@github.com:org/x.git", "'https://xxxxx@github.com:org/x.git'"},
		{"ssh-password", "ssh://git:s3cret@127.0.0.1:notaport/x.git", "'ssh://git:xxxxx@127.0.0.1:notaport/x.git'"},
	} {
		got := waitNotReady(t, newGitRepository(t, ns, c.name, c.url, nil))
		r := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
		if r.Reason != sourcev1.URLInvalidReason || strings.Contains(r.Message, "s3cret") || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: Ready %s %q, want %s", c.name, r.Reason, r.Message, c.want)
		}
	}
}

// TestUppercaseCommitDoesNotReclone compares commit hashes case-insensitively.
func TestUppercaseCommitDoesNotReclone(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"a.yaml": "a"})
	head := r.MustGit(t, "rev-parse", "HEAD")
	obj := waitReady(t, newGitRepository(t, ns, "upper", r.URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Reference = &sourcev1.GitRepositoryRef{Commit: strings.ToUpper(head)}
	}))
	if obj.Status.Artifact.Revision != "sha1:"+head {
		t.Errorf("revision %q", obj.Status.Artifact.Revision)
	}
	before := gitSrv.Fetches(r.Name)
	requestReconcile(t, obj)
	if n := gitSrv.Fetches(r.Name); n != before {
		t.Errorf("an unchanged commit was fetched again (%d → %d)", before, n)
	}
}

// TestSSHTimeout gives up on an SSH server that accepts and never answers,
// within spec.timeout, so it cannot hold a worker; how long it takes is
// BenchmarkSSHTimeout's.
func TestSSHTimeout(t *testing.T) {
	ns := newNamespace(t)
	got := waitNotReady(t, newGitRepository(t, ns, "silent", silentSSHServer(t, ns), withSSHTimeout))
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); !strings.Contains(c.Message, "timeout") {
		t.Errorf("Ready %q, want a timeout", c.Message)
	}
}

// silentSSHServer listens on a loopback port, accepts connections and never
// answers; it returns an ssh:// URL of it and creates in ns the Secret "ssh"
// with an identity and the server's known_hosts. It closes when t ends.
func silentSSHServer(t testing.TB, ns string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold the connection open, silent
		}
	}()
	key, known := sshTestKey(t, l.Addr().String())
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ssh", Namespace: ns}, StringData: map[string]string{"identity": key, "known_hosts": known}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return "ssh://git@" + l.Addr().String() + "/x.git"
}

// withSSHTimeout uses the Secret "ssh" and a 1s spec.timeout.
func withSSHTimeout(o *sourcev1.GitRepository) {
	o.Spec.SecretRef = &meta.LocalObjectReference{Name: "ssh"}
	o.Spec.Timeout = &metav1.Duration{Duration: time.Second}
}
