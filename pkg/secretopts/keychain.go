package secretopts

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// Keys of Docker config Secrets, as Kubernetes and Flux name them.
const (
	// DockerConfigJSONKey holds a kubernetes.io/dockerconfigjson
	// document: {"auths": {<registry>: <entry>}}.
	DockerConfigJSONKey = ".dockerconfigjson"
	// DockerCfgKey holds a legacy kubernetes.io/dockercfg document:
	// {<registry>: <entry>}.
	DockerCfgKey = ".dockercfg"
)

// Credentials are one Docker config's entries by registry host (as
// RegistryHost gives it).
type Credentials map[string]authn.AuthConfig

// Keychain resolves a registry's credentials from Docker configs in order
// of precedence: the first with an entry for the registry wins; none means
// anonymous access. It implements authn.Keychain.
type Keychain []Credentials

// Resolve implements authn.Keychain; it never fails.
func (k Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := RegistryHost(r.RegistryStr())
	for _, c := range k {
		if ac, ok := c[host]; ok {
			return authn.FromConfig(ac), nil
		}
	}
	return authn.Anonymous, nil
}

// AuthRule says how an entry's `auth` (base64 of `user:password`) and its
// `username`/`password` combine.
type AuthRule int

const (
	// AuthOverrides: a non-empty `auth` replaces username and password,
	// as Docker and the kubelet read a config.
	AuthOverrides AuthRule = iota
	// AuthIfNoUsernamePassword: `auth` is read only when the entry has
	// neither username nor password.
	AuthIfNoUsernamePassword
)

// ErrNotDockerConfig is returned by ParseDockerConfigJSON and
// ParseDockerCfg for a document that does not decode as one.
var ErrNotDockerConfig = errors.New("not a Docker config")

// The faults of an entry's `auth`, wrapped by AuthError.
var (
	ErrAuthNotBase64       = errors.New("auth is not base64")
	ErrAuthNotUserPassword = errors.New("auth is not user:password")
)

// AuthError is an entry whose `auth` is not base64 of `user:password`.
type AuthError struct {
	// Registry is the entry's key as written in the document.
	Registry string
	// Err is ErrAuthNotBase64 or ErrAuthNotUserPassword.
	Err error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("registry %q: %s", e.Registry, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// dockerEntry is one registry's entry of a Docker config.
type dockerEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Auth     string `json:"auth,omitempty"`
	// IdentityToken and RegistryToken are OAuth2 tokens some registries issue.
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// ParseDockerConfigJSON reads a `.dockerconfigjson` document. Errors:
// ErrNotDockerConfig, or *AuthError for an entry's `auth`.
func ParseDockerConfigJSON(doc []byte, rule AuthRule) (Credentials, error) {
	var c struct {
		Auths map[string]dockerEntry `json:"auths"`
	}
	if err := json.Unmarshal(doc, &c); err != nil {
		return nil, ErrNotDockerConfig
	}
	return credentials(c.Auths, rule)
}

// ParseDockerCfg reads a legacy `.dockercfg` document. Errors as
// ParseDockerConfigJSON's.
func ParseDockerCfg(doc []byte, rule AuthRule) (Credentials, error) {
	var auths map[string]dockerEntry
	if err := json.Unmarshal(doc, &auths); err != nil {
		return nil, ErrNotDockerConfig
	}
	return credentials(auths, rule)
}

func credentials(entries map[string]dockerEntry, rule AuthRule) (Credentials, error) {
	c := Credentials{}
	for key, e := range entries {
		ac := authn.AuthConfig{Username: e.Username, Password: e.Password,
			IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
		if e.Auth != "" && (rule == AuthOverrides || (e.Username == "" && e.Password == "")) {
			user, pass, err := decodeAuth(e.Auth)
			if err != nil {
				return nil, &AuthError{Registry: key, Err: err}
			}
			ac.Username, ac.Password = user, pass
		}
		c[RegistryHost(key)] = ac
	}
	return c, nil
}

func decodeAuth(s string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", ErrAuthNotBase64
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", ErrAuthNotUserPassword
	}
	return user, pass, nil
}

// RegistryHost reduces a Docker config key (a host, a URL such as Docker
// Hub's legacy `https://index.docker.io/v1/`) to the host
// go-containerregistry names the registry by: Docker Hub's names
// (docker.io, registry-1.docker.io) are all index.docker.io.
func RegistryHost(key string) string {
	h := key
	if i := strings.Index(h, "://"); i >= 0 {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		} else {
			h = h[i+3:]
		}
	}
	h, _, _ = strings.Cut(h, "/")
	if h == "docker.io" || h == "registry-1.docker.io" {
		return name.DefaultRegistry
	}
	return h
}
