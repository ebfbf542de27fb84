// Package source clones the Git repository an ImageUpdateAutomation
// updates, commits the update (signed if asked) and pushes it, with go-git
// only: no `git` binary.
package source

import (
	"errors"
	"net/url"

	"github.com/eddyops/eddy/pkg/gitauth"
)

// Auth is how to reach a remote: a GitRepository's spec.secretRef and
// spec.proxySecretRef read as source-controller reads them (pkg/gitauth).
type Auth = gitauth.Auth

// NewAuth reads a GitRepository Secret's data (Flux's keys) for rawURL's
// transport; data may be nil (no Secret). Errors name keys, never values.
func NewAuth(rawURL string, data map[string][]byte) (*Auth, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("invalid Git URL")
	}
	return gitauth.FromSecret(u, data)
}
