package inspect

import (
	"context"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeyNamespace is where DiffKustomization looks for source-controller's
// artifact signing key (artifact.KeySecretName): the controllers'
// namespace of Flux's layout, which `eddy install`, `eddy bootstrap` and
// `eddy dev` use.
const KeyNamespace = "flux-system"

// checkPublished refuses art, the artifact of ks's source, when the reader
// may read source-controller's signing key and art carries no valid
// signature of that source (artifact.VerifySignature): a tenant who may
// patch `*/status` must not make an operator's diff fetch an address of
// their choosing with the operator's credentials. A reader who may not
// read the key (a tenant) fetches unchecked, acting with their own rights
// only; the bytes are still checked against the digest.
func checkPublished(ctx context.Context, r client.Reader, ks *kustomizev1.Kustomization, art *meta.Artifact) error {
	keys := &artifact.SecretKeyring{Reader: r, Namespace: KeyNamespace}
	if _, err := keys.Key(ctx, false); err != nil {
		return nil
	}
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	owner := artifact.Owner{Kind: ks.Spec.SourceRef.Kind, Namespace: ns, Name: ks.Spec.SourceRef.Name}
	return artifact.VerifySignature(ctx, keys, owner, art)
}
