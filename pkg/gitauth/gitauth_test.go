package gitauth

import (
	"net/url"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestFromSecretRefusesIncompleteCredentialsNamingKeysOnly(t *testing.T) {
	https, _ := url.Parse("https://git.example.com/org/repo.git")
	sshURL, _ := url.Parse("ssh://git@git.example.com/org/repo.git")
	for _, c := range []struct {
		u    *url.URL
		data map[string][]byte
		want string
	}{
		{https, map[string][]byte{"bearerToken": []byte("s3cret"), "username": []byte("u")}, "'bearerToken' cannot be used together with 'username' and 'password'"},
		{https, map[string][]byte{"password": []byte("s3cret")}, "'password' is set but 'username' is empty"},
		{https, map[string][]byte{"tls.crt": []byte("s3cret")}, "'tls.crt' and 'tls.key' must be set together"},
		{sshURL, map[string][]byte{"known_hosts": []byte("x")}, "'identity' is required"},
		{sshURL, map[string][]byte{"identity": []byte("s3cret")}, "'known_hosts' is required"},
		{sshURL, map[string][]byte{"identity": []byte("s3cret"), "known_hosts": []byte("x")}, "'identity' is not a valid private key"},
		{&url.URL{Scheme: "ftp", Host: "x"}, nil, `unsupported URL scheme "ftp"`},
	} {
		_, err := FromSecret(c.u, c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.u.Scheme, keys(c.data), err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("a secret value in %q", err)
		}
	}
}

func TestFromSecretReadsBasicTokenAndCA(t *testing.T) {
	u, _ := url.Parse("https://git.example.com/org/repo.git")
	a, err := FromSecret(u, map[string][]byte{"username": []byte("u"), "password": []byte("p"), "caFile": []byte("CA")})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := a.Method.(*githttp.BasicAuth); !ok || b.Username != "u" || b.Password != "p" || string(a.CABundle) != "CA" {
		t.Errorf("basic auth with the legacy caFile: %#v", a)
	}
	a, err = FromSecret(u, map[string][]byte{"bearerToken": []byte("t")})
	if err != nil {
		t.Fatal(err)
	}
	if tok, ok := a.Method.(*githttp.TokenAuth); !ok || tok.Token != "t" {
		t.Errorf("bearer token: %#v", a.Method)
	}
	if a, err = FromSecret(u, nil); err != nil || a.Method != nil {
		t.Errorf("no Secret: %v %v, want anonymous", a, err)
	}
}

func TestProxyNeedsAnAddress(t *testing.T) {
	if _, err := Proxy(map[string][]byte{"username": []byte("u")}); err == nil || !strings.Contains(err.Error(), "'address' is required") {
		t.Errorf("no address: %v", err)
	}
	p, err := Proxy(map[string][]byte{"address": []byte("http://proxy:3128"), "username": []byte("u"), "password": []byte("p")})
	if err != nil || p.URL != "http://proxy:3128" || p.Username != "u" || p.Password != "p" {
		t.Errorf("proxy: %+v %v", p, err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
