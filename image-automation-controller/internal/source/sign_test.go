package source

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/eddyops/eddy/pkg/gitauth"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"github.com/eddyops/eddy/pkg/gitserver"
)

// armoredKey returns an armored private key encrypted with passphrase and
// the armored public key ring.
func armoredKey(t *testing.T, passphrase string) (private, public string) {
	t.Helper()
	e, err := openpgp.NewEntity("Flux Bot", "", "flux@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
		t.Fatal(err)
	}
	var priv bytes.Buffer
	w, _ = armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return priv.String(), pub.String()
}

func TestUpdateSignsWithOpenPGP(t *testing.T) {
	priv, pub := armoredKey(t, "s3cret")
	if _, err := OpenPGPKey(map[string][]byte{"git.asc": []byte(priv)}); err == nil ||
		err.Error() != "'git.asc' is encrypted and the secret has no 'passphrase'" {
		t.Errorf("without passphrase: %v", err)
	}
	if _, err := OpenPGPKey(map[string][]byte{"git.asc": []byte(priv), "passphrase": []byte("wrong")}); err == nil {
		t.Error("a wrong passphrase was accepted")
	}
	key, err := OpenPGPKey(map[string][]byte{"git.asc": []byte(priv), "passphrase": []byte("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	r := newPushableRepo(t)
	c := clone(t, r, Ref{Branch: "main"})
	spec := author
	spec.SignKey = key
	out, err := c.Update(context.Background(), applySetters(""), message(""), spec, PushSpec{})
	if err != nil {
		t.Fatal(err)
	}
	pushed := clone(t, r, Ref{Branch: "main"})
	commit, err := pushed.Repo.CommitObject(out.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := commit.Verify(pub); err != nil {
		t.Errorf("the pushed commit's signature does not verify: %v", err)
	}
}

func TestUpdateSignsWithSSH(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen verifies the signature: not installed")
	}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := SSHSigner(map[string][]byte{"identity": pem.EncodeToMemory(block), "password": []byte("pw")})
	if err != nil {
		t.Fatal(err)
	}
	r := newPushableRepo(t)
	spec := author
	spec.Signer = signer
	out, err := clone(t, r, Ref{Branch: "main"}).Update(context.Background(), applySetters(""), message(""), spec, PushSpec{})
	if err != nil {
		t.Fatal(err)
	}
	// What `git verify-commit` does with gpg.format=ssh: ssh-keygen -Y verify
	// of the commit without its signature.
	commit, err := clone(t, r, Ref{Branch: "main"}).Repo.CommitObject(out.Commit)
	if err != nil {
		t.Fatal(err)
	}
	var payload plumbing.MemoryObject
	if err := commit.EncodeWithoutSignature(&payload); err != nil {
		t.Fatal(err)
	}
	rd, _ := payload.Reader()
	var body bytes.Buffer
	body.ReadFrom(rd)
	dir := t.TempDir()
	allowed := "flux@example.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + "\n"
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cmd := exec.Command(keygen, "-Y", "verify", "-f", write("allowed", allowed), "-I", "flux@example.com", "-n", "git",
		"-s", write("sig", commit.PGPSignature))
	cmd.Stdin = &body
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ssh-keygen -Y verify: %v: %s", err, out)
	}
}

func TestCloneAndPushWithBasicBearerAndSSHAuth(t *testing.T) {
	r := newPushableRepo(t)
	root := filepath.Dir(r.Bare)
	srv, err := gitserver.Start(gitserver.Options{Root: root, Username: "bot", Password: "pw", BearerToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	sshKey, _ := ssh.NewSignerFromKey(key)
	sshSrv, err := gitserver.StartSSH(root, sshKey.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	defer sshSrv.Close()
	block, _ := ssh.MarshalPrivateKey(key, "")
	url := srv.URL + "/" + r.Name
	for _, tc := range []struct {
		name string
		url  string
		data map[string][]byte
	}{
		{"basic", url, map[string][]byte{"username": []byte("bot"), "password": []byte("pw")}},
		{"bearer", url, map[string][]byte{"bearerToken": []byte("tok")}},
		{"ssh", sshSrv.URL + "/" + r.Name, map[string][]byte{"identity": pem.EncodeToMemory(block), "known_hosts": sshSrv.KnownHosts}},
	} {
		auth, err := NewAuth(tc.url, tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := Clone(context.Background(), tc.url, auth, Ref{Branch: "main"}, t.TempDir())
		if err != nil {
			t.Fatalf("%s: clone: %v", tc.name, err)
		}
		if _, err := c.Update(context.Background(), applySetters(""), message(""), author, PushSpec{Branch: "auth-" + tc.name}); err != nil {
			t.Errorf("%s: push: %v", tc.name, err)
		}
	}
	if _, err := Clone(context.Background(), url, nil, Ref{Branch: "main"}, t.TempDir()); err == nil {
		t.Error("cloned without credentials")
	}
	if _, err := NewAuth(url, map[string][]byte{"bearerToken": []byte("x"), "username": []byte("y")}); err == nil {
		t.Error("bearer token with username accepted")
	}
}

// spec.proxySecretRef: clone and push go through the proxy.
func TestCloneAndPushThroughTheProxy(t *testing.T) {
	r := newPushableRepo(t)
	var mu sync.Mutex
	seen := 0
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		mu.Lock()
		seen++
		mu.Unlock()
		pr.Out.URL = pr.In.URL // a forward proxy: the request names its target
	}})
	defer proxy.Close()
	opts, err := gitauth.Proxy(map[string][]byte{"address": []byte(proxy.URL)})
	if err != nil {
		t.Fatal(err)
	}
	auth := &Auth{Proxy: opts}
	c, err := Clone(context.Background(), r.URL(), auth, Ref{Branch: "main"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	cloned := count()
	if _, err := c.Update(context.Background(), applySetters(""), message(""), author, PushSpec{}); err != nil {
		t.Fatal(err)
	}
	if all := count(); cloned == 0 || all <= cloned {
		t.Errorf("requests through the proxy: %d for the clone, %d in all", cloned, all)
	}
	if _, err := gitauth.Proxy(map[string][]byte{"username": []byte("u")}); err == nil {
		t.Error("a proxy secret without address was accepted")
	}
}
