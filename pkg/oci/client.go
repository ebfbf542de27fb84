package oci

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
)

// Options say how a Client reaches registries.
type Options struct {
	// Creds are static credentials: "<username>:<password>", or a registry
	// token alone (no colon), as flux's --creds. Empty: Keychain.
	Creds string
	// Keychain finds credentials when Creds is empty; nil is
	// authn.DefaultKeychain (the Docker config: $DOCKER_CONFIG or
	// ~/.docker/config.json, and its credential helpers).
	Keychain authn.Keychain
	// Insecure allows plain HTTP and TLS without verification (flux's
	// --insecure-registry). Loopback and RFC 1918 registries are reached
	// over plain HTTP either way (go-containerregistry's rule).
	Insecure bool
	// Transport carries the requests when set (default: go-containerregistry's).
	Transport http.RoundTripper
}

// Client pushes, pulls, lists and tags Flux artifacts. It is safe for
// concurrent use.
type Client struct {
	opts []crane.Option
}

// NewClient returns a Client with o. Its only error: Creds ":" (an empty
// username and password), "credentials cannot be empty".
func NewClient(o Options) (*Client, error) {
	opts := []crane.Option{crane.WithUserAgent(UserAgent)}
	if o.Creds != "" {
		auth, err := authFromCreds(o.Creds)
		if err != nil {
			return nil, err
		}
		opts = append(opts, crane.WithAuth(auth))
	} else {
		kc := o.Keychain
		if kc == nil {
			kc = authn.DefaultKeychain
		}
		opts = append(opts, crane.WithAuthFromKeychain(kc))
	}
	if o.Insecure {
		opts = append(opts, crane.Insecure)
	}
	if o.Transport != nil {
		opts = append(opts, crane.WithTransport(o.Transport))
	}
	return &Client{opts: opts}, nil
}

// authFromCreds reads flux's --creds: user:password, or a token alone.
func authFromCreds(creds string) (authn.Authenticator, error) {
	user, pass, ok := strings.Cut(creds, ":")
	if !ok {
		return authn.FromConfig(authn.AuthConfig{RegistryToken: creds}), nil
	}
	if user == "" && pass == "" {
		return nil, errors.New("credentials cannot be empty")
	}
	return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), nil
}

func (c *Client) with(ctx context.Context) []crane.Option {
	return append([]crane.Option{crane.WithContext(ctx)}, c.opts...)
}
