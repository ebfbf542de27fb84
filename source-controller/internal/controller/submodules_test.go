package controller

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestSubmoduleCredentialsGoOnlyToTheGitRepositorysOrigin: a submodule
// URL gets the GitRepository's credentials only with its scheme, host and
// port; a relative URL resolves against the parent as git does; file://,
// local paths and relative URLs leaving the host are refused.
func TestSubmoduleCredentialsGoOnlyToTheGitRepositorysOrigin(t *testing.T) {
	const (
		https = "https://git.example.com/org/app.git"
		ssh   = "ssh://git@git.example.com/org/app.git"
	)
	cases := []struct {
		name, origin, base, raw string
		addr                    string // "" when refused
		creds                   bool
		refusal                 string
	}{
		{"same host https", https, https, "https://git.example.com/org/lib.git", "https://git.example.com/org/lib.git", true, ""},
		{"same host, other case and default port", https, https, "https://GIT.example.com:443/lib.git", "https://GIT.example.com:443/lib.git", true, ""},
		{"other host", https, https, "https://evil.example.net/org/lib.git", "https://evil.example.net/org/lib.git", false, ""},
		{"subdomain is another host", https, https, "https://git.example.com.evil.net/lib.git", "https://git.example.com.evil.net/lib.git", false, ""},
		{"plain http on the same host", https, https, "http://git.example.com/org/lib.git", "http://git.example.com/org/lib.git", false, ""},
		{"different port", https, https, "https://git.example.com:8443/org/lib.git", "https://git.example.com:8443/org/lib.git", false, ""},
		{"git protocol", https, https, "git://git.example.com/org/lib.git", "git://git.example.com/org/lib.git", false, ""},
		{"ssh under an https parent", https, https, "ssh://git@git.example.com/org/lib.git", "", false, "needs a key"},
		{"scp-like under an https parent", https, https, "git@git.example.com:org/lib.git", "", false, "needs a key"},
		{"scp-like under an ssh parent", ssh, ssh, "git@git.example.com:org/lib.git", "git@git.example.com:org/lib.git", true, ""},
		{"ssh with the default port", ssh, ssh, "ssh://git@git.example.com:22/org/lib.git", "ssh://git@git.example.com:22/org/lib.git", true, ""},
		{"ssh to another host", ssh, ssh, "git@evil.example.net:org/lib.git", "", false, "needs a key"},
		{"relative sibling", https, https, "../lib.git", "https://git.example.com/org/lib.git", true, ""},
		{"relative child", https, https, "./lib.git", "https://git.example.com/org/app.git/lib.git", true, ""},
		{"relative to the host's root", https, https, "../../lib.git", "https://git.example.com/lib.git", true, ""},
		{"relative climbing out of the host", https, https, "../../../evil.net/lib.git", "", false, "climbs above the root"},
		{"relative under an scp-like parent", ssh, "git@git.example.com:org/app.git", "../lib.git", "git@git.example.com:org/lib.git", true, ""},
		{"relative under a nested submodule elsewhere", https, "https://evil.example.net/x/lib.git", "../deep.git", "https://evil.example.net/x/deep.git", false, ""},
		{"file URL", https, https, "file:///srv/git/lib.git", "", false, "file:// URLs are refused"},
		{"FILE URL", https, https, "FILE:///srv/git/lib.git", "", false, "file:// URLs are refused"},
		{"absolute local path", https, https, "/srv/git/lib.git", "", false, "local paths are refused"},
		{"bare relative path", https, https, "lib.git", "", false, "local paths are refused"},
		{"dot path without slash", https, https, "..", "", false, "local paths are refused"},
		{"transport helper", https, https, "ext::sh -c touch% /tmp/pwned", "", false, "transport helper"},
		{"unsupported scheme", https, https, "ftp://git.example.com/lib.git", "", false, "scheme 'ftp' is not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			origin, err := url.Parse(c.origin)
			if err != nil {
				t.Fatal(err)
			}
			addr, creds, err := submoduleRemote(origin, c.base, c.raw)
			if c.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), c.refusal) {
					t.Fatalf("got %q (credentials %v), error %v; want refused with %q", addr, creds, err, c.refusal)
				}
				return
			}
			if err != nil || addr != c.addr || creds != c.creds {
				t.Errorf("got %q, credentials %v, error %v; want %q, credentials %v", addr, creds, err, c.addr, c.creds)
			}
		})
	}
}

// TestSubmoduleErrorsNameTheSubmodule: the Ready message of a failed
// submodule names its path and, for an anonymous fetch, why it had no
// credentials; a URL's credentials are masked.
func TestSubmoduleErrorsNameTheSubmodule(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&submoduleError{path: "vendor/local", err: errSubmoduleFile},
			"unable to clone 'https://h/app.git': submodule 'vendor/local': file:// URLs are refused: a submodule must come from a Git server"},
		{&submoduleError{path: "vendor/lib", url: "https://other/lib.git", anonymous: true, err: errors.New("authentication required")},
			"submodule 'vendor/lib': fetching 'https://other/lib.git' without credentials (they go only to the GitRepository's host) failed: authentication required"},
		{&submoduleError{path: "a/b", url: "https://user:s3cret@other/lib.git", anonymous: true, err: errors.New("x")},
			"submodule 'a/b': fetching 'https://xxxxx@other/lib.git' without credentials"},
	} {
		msg := gitError(c.err, "https://h/app.git", "").Message
		if !strings.Contains(msg, c.want) || strings.Contains(msg, "s3cret") {
			t.Errorf("message %q; want it to hold %q and no secret", msg, c.want)
		}
	}
}
