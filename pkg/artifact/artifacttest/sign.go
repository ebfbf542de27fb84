package artifacttest

import (
	"context"
	"testing"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Key is the artifact signing key of tests that run a consumer in-process
// with Keyring, beside an artifact server of their own.
var Key = []byte("eddy-artifacttest-signing-key-32")

// Keyring returns the Keyring of Key, for an artifact.Fetcher's Keys.
func Keyring() artifact.Keyring { return artifact.StaticKey(Key) }

// Sign returns a signed with Key for owner, as source-controller signs
// what it publishes (artifact.Sign).
func Sign(owner artifact.Owner, a *meta.Artifact) *meta.Artifact {
	return artifact.Sign(Key, owner, a)
}

// SignInCluster returns a signed for owner with the key of the cluster
// behind c (the Secret artifact.KeySecretName in namespace ns, created as
// source-controller would when missing), for tests whose artifact server
// feeds a built consumer binary. It fails t when the key cannot be had.
func SignInCluster(t testing.TB, c client.Client, ns string, owner artifact.Owner, a *meta.Artifact) *meta.Artifact {
	t.Helper()
	k := &artifact.SecretKeyring{Reader: c, Writer: c, Namespace: ns}
	key, err := k.Key(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	return artifact.Sign(key, owner, a)
}
