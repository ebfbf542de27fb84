package controller

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/fluxcd/pkg/apis/meta"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// TestSSHAuth reconciles over SSH with an identity and known_hosts, with
// and without a key passphrase, and refuses an unknown host key.
func TestSSHAuth(t *testing.T) {
	ns := newNamespace(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	encrypted, err := gossh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("key-passphrase"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if _, err := gitserver.InitBare(root, "app.git"); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t, map[string]string{"app.yaml": "a: 1\n"})
	head := r.MustGit(t, "rev-parse", "HEAD")
	r.MustGit(t, "push", "-q", filepath.Join(root, "app.git"), "main")
	srv, err := gitserver.StartSSH(root, sshPub)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	other, err := gitserver.StartSSH(t.TempDir(), sshPub) // a different host key
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	_, _, otherKey, _, _, err := gossh.ParseKnownHosts(other.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "ssh://git@")
	wrongKnownHosts := knownhosts.Line([]string{knownhosts.Normalize(addr)}, otherKey) + "\n"

	cases := []struct {
		name   string
		data   map[string]string
		reason string // empty: Ready
		msg    string
	}{
		{"identity", map[string]string{"identity": string(pem.EncodeToMemory(plain)), "known_hosts": string(srv.KnownHosts)}, "", ""},
		{"encrypted identity with password", map[string]string{
			"identity": string(pem.EncodeToMemory(encrypted)), "password": "key-passphrase", "known_hosts": string(srv.KnownHosts)}, "", ""},
		{"encrypted identity without password", map[string]string{
			"identity": string(pem.EncodeToMemory(encrypted)), "known_hosts": string(srv.KnownHosts)},
			sourcev1.AuthenticationFailedReason, "SSH identity key is encrypted but no 'password' field was provided"},
		{"unknown host key", map[string]string{"identity": string(pem.EncodeToMemory(plain)), "known_hosts": wrongKnownHosts},
			sourcev1.GitOperationFailedReason, "key mismatch"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := newRepositoryWithSecret(t, ns, "ssh-"+string(rune('a'+i)), srv.URL+"/app.git", tc.data)
			if tc.reason == "" {
				got := waitReady(t, obj)
				if got.Status.Artifact.Revision != "main@sha1:"+head {
					t.Errorf("revision %q", got.Status.Artifact.Revision)
				}
				download(t, got.Status.Artifact)
				return
			}
			got := waitNotReady(t, obj)
			c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
			t.Logf("Ready=False %s: %s", c.Reason, c.Message)
			if c.Reason != tc.reason || !strings.Contains(c.Message, tc.msg) {
				t.Errorf("Ready=False %s %q, want %s with %q", c.Reason, c.Message, tc.reason, tc.msg)
			}
			if strings.Contains(c.Message, "PRIVATE KEY") || strings.Contains(c.Message, "key-passphrase") {
				t.Errorf("message leaks the secret: %q", c.Message)
			}
		})
	}
}

// sshTestKey returns an identity and a known_hosts line accepting any key
// for addr (the host is never reached in the handshake that matters).
func sshTestKey(t testing.TB, addr string) (identity, known string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := gossh.NewPublicKey(priv.Public())
	return string(pem.EncodeToMemory(block)), knownhosts.Line([]string{knownhosts.Normalize(addr)}, pub) + "\n"
}
