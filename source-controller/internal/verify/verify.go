// Package verify checks the signatures of OCI artifacts before
// source-controller serves them: OCIRepository and HelmChart spec.verify,
// provider cosign or notation (Flux's source.toolkit.fluxcd.io/v1 API).
package verify

import (
	"context"
	"errors"

	"github.com/google/go-containerregistry/pkg/name"
)

// Verifier checks that the artifact at ref, pinned by digest, carries at
// least one signature it trusts. It returns nil when one verifies; otherwise
// an error whose message names why (no signature found, none matched the
// trusted keys or identities), stable and free of secrets, because it becomes
// the SourceVerified condition's message.
type Verifier interface {
	Verify(ctx context.Context, ref name.Digest) error
}

// ErrNoSignature is wrapped by a Verifier's error when the registry holds no
// signature for the artifact at all.
var ErrNoSignature = errors.New("no signature found")
