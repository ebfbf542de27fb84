package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/source-controller/internal/verify"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newNotationVerifier verifies with the trust policy (`trustpolicy.json`)
// and CA certificates (keys ending in `.crt` or `.pem`) of the Secret
// spec.secretRef names, as Flux does; the fingerprint covers those keys.
func newNotationVerifier(ctx context.Context, c client.Reader, namespace string, spec verifySpec, opts []remote.Option) (verify.Verifier, string, *reconciler.Failure) {
	if spec.SecretRef == nil {
		// Flux's message names the artifact's digest reference, known at Verify.
		return noSecretRef{}, "", nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: spec.SecretRef.Name}
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		return nil, "", verifyFailure("notation", "%s", err)
	}
	v, err := verify.NewNotation(key.String(), s.Data, opts...)
	if err != nil {
		return nil, "", verifyFailure("notation", "%s", err)
	}
	trusted := map[string][]byte{}
	for k, d := range s.Data {
		if k == verify.NotationTrustPolicyKey || strings.HasSuffix(k, ".crt") || strings.HasSuffix(k, ".pem") {
			trusted[k] = d
		}
	}
	return v, keysFingerprint("notation", trusted), nil
}

// noSecretRef fails every verification: notation needs a trust policy.
type noSecretRef struct{}

func (noSecretRef) Verify(_ context.Context, ref name.Digest) error {
	return fmt.Errorf("verification secret cannot be empty: '%s'", ref)
}
