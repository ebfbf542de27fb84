package redact

import (
	"strings"
	"testing"
)

const tok = "ghp_S3CRETtoken0123456789"

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// What the user wrote is kept where it is not secret: an SSH login name.
		{"ssh://git@git.example.com:shop/platform-config.git", "ssh://git@git.example.com:shop/platform-config.git"},
		{"ssh://git:s3cret@git.example.com/repo.git", "ssh://git:xxxxx@git.example.com/repo.git"},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"git:s3cret@github.com:org/repo.git", "git:xxxxx@github.com:org/repo.git"},
		// A token as the user name (GitHub's form) and any other userinfo are masked whole.
		{"https://" + tok + "@github.com/org/repo.git", "https://xxxxx@github.com/org/repo.git"},
		{"https://" + tok + "@github.com:org/repo.git", "https://xxxxx@github.com:org/repo.git"},
		{"https://git:s3cret@git.example.com/repo.git", "https://xxxxx@git.example.com/repo.git"},
		{"http://u:p@ss@127.0.0.1:1/repo.git", "http://xxxxx@127.0.0.1:1/repo.git"},
		// A password with an unencoded '#', '?' or '/'.
		{"https://user:pa#ss" + tok + "@github.com/org/r", "https://xxxxx@github.com/org/r"},
		{"https://user:pa?ss" + tok + "@github.com/org/r", "https://xxxxx@github.com/org/r"},
		{"https://user:pa/ss" + tok + "@github.com/org/r", "https://xxxxx@github.com/org/r"},
		{"https://user:12/ss" + tok + "@github.com/org/r", "https://xxxxx@github.com/org/r"},
		// A go-getter forced getter (kustomize's git::) is kept.
		{"git::https://" + tok + "@github.com/org/repo//deploy", "git::https://xxxxx@github.com/org/repo//deploy"},
		{"git::git:s3cret@github.com:org/repo", "git::git:xxxxx@github.com:org/repo"},
		// No userinfo: unchanged, an '@' in the path included.
		{"https://github.com/org/repo.git", "https://github.com/org/repo.git"},
		{"https://github.com/org/repo@v1", "https://github.com/org/repo@v1"},
		{"https://[::1]:8443/org/repo@v1", "https://[::1]:8443/org/repo@v1"},
		{"not a url", "not a url"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMessage(t *testing.T) {
	in := `Get "https://` + tok + `@github.com/org/repo.git/info/refs?service=git-upload-pack": EOF; proxy http://u:p#w` + tok + `@proxy:3128 refused; ssh://git:pw` + tok + `@host/x`
	want := `Get "https://xxxxx@github.com/org/repo.git/info/refs?service=git-upload-pack": EOF; proxy http://xxxxx@proxy:3128 refused; ssh://git:xxxxx@host/x`
	if got := Message(in); got != want {
		t.Errorf("Message:\n got %s\nwant %s", got, want)
	}
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ssh://git@git.example.com:shop/platform-config.git",
			`parse "ssh://git@git.example.com:shop/platform-config.git": invalid port ":shop" after host`},
		{"https://" + tok + "@github.com:org/repo.git", `parse "https://xxxxx@github.com:org/repo.git": invalid port ":org" after host`},
		// url.Parse's own reason would quote a piece of the password (":pa").
		{"https://user:pa#ss" + tok + "@github.com/org/r", `parse "https://xxxxx@github.com/org/r": net/url: invalid userinfo`},
		{"https://user:pa/ss" + tok + "@github.com/org/r", `parse "https://xxxxx@github.com/org/r": net/url: invalid userinfo`},
	} {
		_, err := ParseURL(c.in)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseURL(%q) error %v, want %s", c.in, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), `":pa`)) {
			t.Errorf("ParseURL(%q) error leaks the secret: %v", c.in, err)
		}
	}
	if u, err := ParseURL("https://" + tok + "@github.com/org/repo.git"); err != nil || u.User.Username() != tok {
		t.Errorf("ParseURL of a valid URL: %v %v", u, err)
	}
}

func TestQuoted(t *testing.T) {
	for _, c := range []struct{ msg, raw, want string }{
		{"bad registry: user:s3cr3t@ghcr.io", "oci://user:s3cr3t@ghcr.io/org/app", "bad registry: xxxxx@ghcr.io"},
		{"bad registry: t0ken@ghcr.io", "oci://t0ken@ghcr.io/org/app", "bad registry: xxxxx@ghcr.io"},
		{"no host: git:s3cr3t@", "ssh://git:s3cr3t@host/repo", "no host: git:xxxxx@"},
		{"bad registry: ghcr.io:x", "oci://ghcr.io/org/app", "bad registry: ghcr.io:x"},
	} {
		if got := Quoted(c.msg, c.raw); got != c.want {
			t.Errorf("Quoted(%q, %q) = %q, want %q", c.msg, c.raw, got, c.want)
		}
	}
}
