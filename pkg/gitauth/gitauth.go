// Package gitauth reads the Secrets a GitRepository names into go-git's
// transport options: spec.secretRef (credentials, TLS) and
// spec.proxySecretRef, with Flux's keys (flux-contract §3.1). Both
// source-controller, which fetches the repository, and
// image-automation-controller, which pushes to it, read them so.
package gitauth

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

// Auth is how to reach a remote.
type Auth struct {
	// Method is nil without credentials (anonymous HTTP).
	Method transport.AuthMethod
	// CABundle, ClientCert and ClientKey are PEM; empty when not set.
	CABundle              []byte
	ClientCert, ClientKey []byte
	// Proxy is spec.proxySecretRef's (see Proxy); empty: the environment's
	// proxy settings.
	Proxy transport.ProxyOptions
}

// FromSecret validates spec.secretRef's data for the URL's transport:
// over HTTP(S) `username`+`password` (basic) or `bearerToken`, `ca.crt`
// (or the legacy `caFile`), `tls.crt`+`tls.key`; over SSH `identity` (a
// private key, `password` its passphrase) and `known_hosts`, both
// required. data may be nil (no Secret). Errors are Flux's messages and
// name keys, never values.
func FromSecret(u *url.URL, data map[string][]byte) (*Auth, error) {
	switch u.Scheme {
	case "http", "https":
		return httpAuth(data)
	case "ssh":
		m, err := sshAuth(u, data)
		if err != nil {
			return nil, err
		}
		return &Auth{Method: m}, nil
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
}

func httpAuth(data map[string][]byte) (*Auth, error) {
	a := &Auth{}
	user, pass, token := string(data["username"]), string(data["password"]), string(data["bearerToken"])
	switch {
	case token != "" && (user != "" || pass != ""):
		return nil, errors.New("invalid auth options: 'bearerToken' cannot be used together with 'username' and 'password'")
	case pass != "" && user == "":
		return nil, errors.New("invalid auth options: 'password' is set but 'username' is empty")
	case token != "":
		a.Method = &githttp.TokenAuth{Token: token}
	case user != "":
		a.Method = &githttp.BasicAuth{Username: user, Password: pass}
	}
	a.CABundle = data["ca.crt"]
	if len(a.CABundle) == 0 {
		a.CABundle = data["caFile"] // legacy key
	}
	a.ClientCert, a.ClientKey = data["tls.crt"], data["tls.key"]
	if (len(a.ClientCert) == 0) != (len(a.ClientKey) == 0) {
		return nil, errors.New("invalid auth options: 'tls.crt' and 'tls.key' must be set together")
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
	pass := string(data["password"])
	if pass == "" {
		var missing *ssh.PassphraseMissingError
		if _, err := ssh.ParseRawPrivateKey(identity); errors.As(err, &missing) {
			return nil, errors.New("SSH identity key is encrypted but no 'password' field was provided in the secret")
		}
	}
	keys, err := gitssh.NewPublicKeys(user, identity, pass)
	if err != nil {
		return nil, errors.New("invalid 'ssh' auth option: 'identity' is not a valid private key for the given 'password'")
	}
	if keys.HostKeyCallback, err = knownHostsCallback(known); err != nil {
		return nil, err
	}
	return keys, nil
}

// Proxy reads spec.proxySecretRef's data: `address` (required, a URL),
// `username` and `password`. Errors name keys, never values.
func Proxy(data map[string][]byte) (transport.ProxyOptions, error) {
	addr := string(data["address"])
	if addr == "" {
		return transport.ProxyOptions{}, errors.New("invalid proxy secret: 'address' is required")
	}
	if _, err := url.Parse(addr); err != nil {
		return transport.ProxyOptions{}, errors.New("invalid proxy secret: 'address' is not a URL")
	}
	return transport.ProxyOptions{URL: addr, Username: string(data["username"]), Password: string(data["password"])}, nil
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
