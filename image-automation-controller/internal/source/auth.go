// Package source clones the Git repository an ImageUpdateAutomation
// updates, commits the update (signed if asked) and pushes it, with go-git
// only: no `git` binary.
package source

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Auth is how to reach a remote: built from a GitRepository's
// spec.secretRef data by NewAuth.
type Auth struct {
	Method                transport.AuthMethod
	CABundle              []byte
	ClientCert, ClientKey []byte
	// Proxy is the GitRepository's spec.proxySecretRef (ProxyOptions);
	// empty: the environment's proxy settings.
	Proxy transport.ProxyOptions
}

// ProxyOptions reads a GitRepository's spec.proxySecretRef data (Flux's
// keys): `address` (required, a URL), `username` and `password`. Errors
// name keys, never values.
func ProxyOptions(data map[string][]byte) (transport.ProxyOptions, error) {
	addr := string(data["address"])
	if addr == "" {
		return transport.ProxyOptions{}, errors.New("invalid proxy secret: 'address' is required")
	}
	if _, err := url.Parse(addr); err != nil {
		return transport.ProxyOptions{}, errors.New("invalid proxy secret: 'address' is not a URL")
	}
	return transport.ProxyOptions{URL: addr, Username: string(data["username"]), Password: string(data["password"])}, nil
}

// NewAuth reads a GitRepository Secret's data (Flux's keys) for the URL's
// transport: over HTTP(S) `username`+`password` (basic) or `bearerToken`,
// `ca.crt` (or the legacy `caFile`), `tls.crt`+`tls.key`; over SSH
// `identity` (a private key, `password` its passphrase) and `known_hosts`,
// both required. data may be nil (no Secret). Errors name keys, never
// values.
func NewAuth(rawURL string, data map[string][]byte) (*Auth, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("invalid Git URL")
	}
	a := &Auth{}
	switch u.Scheme {
	case "http", "https":
		user, pass, token := string(data["username"]), string(data["password"]), string(data["bearerToken"])
		switch {
		case token != "" && (user != "" || pass != ""):
			return nil, errors.New("invalid auth options: 'bearerToken' cannot be used together with 'username' and 'password'")
		case token != "":
			a.Method = &githttp.TokenAuth{Token: token}
		case user != "" || pass != "":
			a.Method = &githttp.BasicAuth{Username: user, Password: pass}
		}
		a.CABundle = data["ca.crt"]
		if len(a.CABundle) == 0 {
			a.CABundle = data["caFile"]
		}
		a.ClientCert, a.ClientKey = data["tls.crt"], data["tls.key"]
		if (len(a.ClientCert) == 0) != (len(a.ClientKey) == 0) {
			return nil, errors.New("invalid auth options: 'tls.crt' and 'tls.key' must be set together")
		}
	case "ssh":
		m, err := sshAuth(u, data)
		if err != nil {
			return nil, err
		}
		a.Method = m
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	return a, nil
}

func sshAuth(u *url.URL, data map[string][]byte) (transport.AuthMethod, error) {
	identity, known := data["identity"], data["known_hosts"]
	if len(identity) == 0 {
		return nil, errors.New("invalid 'ssh' auth option: 'identity' is required")
	}
	if len(known) == 0 {
		return nil, errors.New("invalid 'ssh' auth option: 'known_hosts' is required")
	}
	user := "git"
	if u.User != nil && u.User.Username() != "" {
		user = u.User.Username()
	}
	keys, err := gitssh.NewPublicKeys(user, identity, string(data["password"]))
	if err != nil {
		return nil, errors.New("invalid 'ssh' auth option: 'identity' is not a valid private key for the given 'password'")
	}
	cb, err := knownHostsCallback(known)
	if err != nil {
		return nil, err
	}
	keys.HostKeyCallback = cb
	return keys, nil
}

// knownHostsCallback checks host keys against known_hosts lines
// (knownhosts reads files only, so they go through a temporary one).
func knownHostsCallback(known []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "known_hosts-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(known)
	if err := errors.Join(werr, f.Close()); err != nil {
		return nil, err
	}
	cb, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, errors.New("invalid 'ssh' auth option: 'known_hosts' cannot be parsed")
	}
	return cb, nil
}
