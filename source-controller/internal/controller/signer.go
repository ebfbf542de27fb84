package controller

import (
	"context"
	"fmt"
	"sync"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Signer signs every artifact written to a source's status
// (artifact.Signature in status.artifact.metadata), so that consumers
// fetch only what this controller published. A nil Signer signs nothing:
// tests that drive a reconciler without consumers.
type Signer struct {
	Keys artifact.Keyring

	mu  sync.Mutex
	key []byte
}

// ready reads the key (cached by Keys) before a reconcile writes any
// artifact; its error fails the reconcile, retried with back-off.
func (s *Signer) ready(ctx context.Context) error {
	if s == nil {
		return nil
	}
	key, err := s.Keys.Key(ctx, false)
	if err != nil {
		return fmt.Errorf("artifact signing key: %w", err)
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return nil
}

// sign writes a's signature for obj of kind into a's metadata, with the
// key ready last read; a nil a is left alone.
func (s *Signer) sign(kind string, obj client.Object, a *meta.Artifact) {
	if s == nil || a == nil {
		return
	}
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key == nil {
		return // ready failed: the reconcile does not get this far
	}
	if a.Metadata == nil {
		a.Metadata = map[string]string{}
	}
	a.Metadata[artifact.SignatureKey] = artifact.Signature(key, artifact.Owner{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, a)
}

// published returns a, read from obj's status, when this controller
// signed it for obj (under the URL it was signed with), else nil. Only a
// published artifact is kept and re-signed with a refreshed URL: a status
// artifact a tenant edited (an older stored file under the current
// revision, say) must not be signed, or consumers would apply it. An
// artifact from before signing, or signed with a replaced key, is dropped
// and so rebuilt once. A nil Signer keeps a.
func (s *Signer) published(ctx context.Context, kind string, obj client.Object, a *meta.Artifact) *meta.Artifact {
	if s == nil || a == nil {
		return a
	}
	owner := artifact.Owner{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if artifact.VerifySignature(ctx, s.Keys, owner, a) != nil {
		return nil
	}
	return a
}

// verify checks that a, read from obj's status to be used from storage
// (an included GitRepository's, a HelmChart's source), is what this
// controller published for obj: a forged status must not point a tenant's
// source at another tenant's stored files. A nil Signer checks nothing.
func (s *Signer) verify(ctx context.Context, kind string, obj client.Object, a *meta.Artifact) error {
	owner := artifact.Owner{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !owner.Holds(a) {
		return fmt.Errorf("%w: the artifact of %s is not stored in its own directory", artifact.ErrUnsigned, owner)
	}
	if s == nil {
		return nil
	}
	return artifact.VerifySignature(ctx, s.Keys, owner, a)
}
