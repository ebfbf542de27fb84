package registry

import (
	"errors"
	"fmt"

	"github.com/eddyops/eddy/pkg/secretopts"
)

// Keychain resolves a registry's credentials from dockerconfigjson
// documents (the `.dockerconfigjson` key of a kubernetes.io/dockerconfigjson
// Secret: an ImageRepository's spec.secretRef, then its ServiceAccount's
// imagePullSecrets, in that order). The first document with an entry for
// the registry wins; no entry means anonymous access.
type Keychain = secretopts.Keychain

// ErrInvalidDockerConfig is returned (wrapped with the document's position)
// by NewKeychain for a document that is not a dockerconfigjson; the error
// quotes nothing of the document.
var ErrInvalidDockerConfig = errors.New("not a valid .dockerconfigjson document")

// NewKeychain parses the documents, in order of precedence; an entry's
// `auth` overrides its username and password, as Docker reads it. A
// document that is not JSON, or an `auth` value that is not base64 of
// `user:password`, is an error naming the document by its position
// (0-based) and the registry, never its content.
func NewKeychain(docs ...[]byte) (Keychain, error) {
	k := make(Keychain, 0, len(docs))
	for i, doc := range docs {
		c, err := secretopts.ParseDockerConfigJSON(doc, secretopts.AuthOverrides)
		var ae *secretopts.AuthError
		switch {
		case errors.As(err, &ae):
			return nil, fmt.Errorf("docker config %d, registry %q: %w", i, secretopts.RegistryHost(ae.Registry), ae.Err)
		case err != nil:
			return nil, fmt.Errorf("docker config %d: %w", i, ErrInvalidDockerConfig)
		}
		k = append(k, c)
	}
	return k, nil
}

// keychainSecrets returns the credential values k holds, to mask them in
// messages.
func keychainSecrets(k Keychain) []string {
	var s []string
	for _, c := range k {
		for _, ac := range c {
			s = append(s, ac.Password, ac.IdentityToken, ac.RegistryToken)
		}
	}
	return s
}
