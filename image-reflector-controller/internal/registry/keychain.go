package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Keychain resolves a registry's credentials from dockerconfigjson
// documents (the `.dockerconfigjson` key of a kubernetes.io/dockerconfigjson
// Secret: an ImageRepository's spec.secretRef, then its ServiceAccount's
// imagePullSecrets, in that order). The first document with an entry for
// the registry wins; no entry means anonymous access.
type Keychain struct {
	auths []map[string]authn.AuthConfig
}

// dockerConfig is the shape of a .dockerconfigjson document.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// ErrInvalidDockerConfig is returned (wrapped with the document's position)
// by NewKeychain for a document that is not a dockerconfigjson; the error
// quotes nothing of the document.
var ErrInvalidDockerConfig = errors.New("not a valid .dockerconfigjson document")

// NewKeychain parses the documents, in order of precedence. A document that
// is not JSON, or an `auth` value that is not base64 of `user:password`,
// is an error naming the document by its position (0-based), never its
// content.
func NewKeychain(docs ...[]byte) (*Keychain, error) {
	k := &Keychain{}
	for i, doc := range docs {
		var c dockerConfig
		if err := json.Unmarshal(doc, &c); err != nil {
			return nil, fmt.Errorf("docker config %d: %w", i, ErrInvalidDockerConfig)
		}
		m := map[string]authn.AuthConfig{}
		for host, a := range c.Auths {
			ac := authn.AuthConfig{Username: a.Username, Password: a.Password,
				IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
			if a.Auth != "" {
				user, pass, err := decodeAuth(a.Auth)
				if err != nil {
					return nil, fmt.Errorf("docker config %d, registry %q: %w", i, normalizeHost(host), err)
				}
				ac.Username, ac.Password = user, pass
			}
			m[normalizeHost(host)] = ac
		}
		k.auths = append(k.auths, m)
	}
	return k, nil
}

func decodeAuth(s string) (string, string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", errors.New("auth is not base64")
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("auth is not user:password")
	}
	return user, pass, nil
}

// normalizeHost reduces a dockerconfigjson key to a registry host:
// `https://index.docker.io/v1/` → `index.docker.io`; Docker Hub's names
// (docker.io, registry-1.docker.io) are all index.docker.io, as ggcr's
// name.Registry.RegistryStr() gives it.
func normalizeHost(key string) string {
	h := key
	if strings.Contains(h, "://") {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		}
	}
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "docker.io", "registry-1.docker.io":
		return "index.docker.io"
	}
	return h
}

// Resolve implements authn.Keychain.
func (k *Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := normalizeHost(r.RegistryStr())
	for _, m := range k.auths {
		if ac, ok := m[host]; ok {
			return authn.FromConfig(ac), nil
		}
	}
	return authn.Anonymous, nil
}

// secrets returns the credential values the keychain holds, to mask them
// in messages.
func (k *Keychain) secrets() []string {
	var s []string
	for _, m := range k.auths {
		for _, ac := range m {
			s = append(s, ac.Password, ac.IdentityToken, ac.RegistryToken)
		}
	}
	return s
}
