package artifact

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
)

// SignatureKey is the key of an artifact's status metadata
// (status.artifact.metadata) that holds source-controller's signature. The
// metadata map is Flux's own free-form field, so Flux's API and the flux
// CLI accept it unchanged; being part of the artifact, it is replaced
// with it in one status write.
const SignatureKey = "eddy.dev/signature"

// signaturePrefix names the scheme, so another can follow it.
const signaturePrefix = "hmac-sha256:"

// ErrUnsigned is wrapped by VerifySignature's error when an artifact
// carries no signature or one that does not match: source-controller did
// not publish it for that object.
var ErrUnsigned = errors.New("artifact not published by source-controller")

// Owner names the source object whose status carries an artifact, e.g.
// {GitRepository, team-a, app}.
type Owner struct {
	Kind, Namespace, Name string
}

func (o Owner) String() string { return o.Kind + "/" + o.Namespace + "/" + o.Name }

// Holds reports whether a's storage path is a file directly in o's own
// storage directory (ObjectDir), not a dot file. source-controller reads
// stored files by path, and a status, path included, may be written by a
// tenant: a path elsewhere must never be opened, verified or removed.
func (o Owner) Holds(a *meta.Artifact) bool {
	if a == nil || a.Path == "" || path.Clean(a.Path) != a.Path {
		return false
	}
	base := path.Base(a.Path)
	return path.Dir(a.Path) == ObjectDir(o.Kind, o.Namespace, o.Name) && !strings.HasPrefix(base, ".")
}

// Signature returns the signature of a as published in owner's status:
// "hmac-sha256:<hex>" over the owner's kind, namespace and name and the
// artifact's URL (whole, host included, as written in the status), digest,
// revision and size (absent: empty) and its other metadata (sorted by key:
// consumers read e.g. the OCI origin revision from it), each length-prefixed
// so no two different tuples sign alike. The URL is signed whole so that a signed
// path cannot be sent to another host; consumers apply the
// SOURCE_CONTROLLER_LOCALHOST host override only after the check.
func Signature(key []byte, owner Owner, a *meta.Artifact) string {
	size := ""
	if a.Size != nil {
		size = strconv.FormatInt(*a.Size, 10)
	}
	fields := []string{"eddy-artifact-v2", owner.Kind, owner.Namespace, owner.Name, a.URL, a.Digest, a.Revision, size}
	keys := make([]string, 0, len(a.Metadata))
	for k := range a.Metadata {
		if k != SignatureKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fields = append(fields, k, a.Metadata[k])
	}
	m := hmac.New(sha256.New, key)
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		m.Write([]byte(f))
	}
	return signaturePrefix + hex.EncodeToString(m.Sum(nil))
}

// Sign returns a copy of a whose metadata carries its Signature under
// SignatureKey (other metadata kept). source-controller signs every
// artifact it writes to a status, with the key of its SecretKeyring.
func Sign(key []byte, owner Owner, a *meta.Artifact) *meta.Artifact {
	out := a.DeepCopy()
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Metadata[SignatureKey] = Signature(key, owner, a)
	return out
}

// VerifySignature checks a's signature for owner with the key of keys,
// rereading the key once (Keyring.Key with fresh) when it does not match,
// so a key source-controller replaced is picked up. Its error wraps
// ErrUnsigned, names the owner and never the URL or the key; a key that
// cannot be read is returned as such.
func VerifySignature(ctx context.Context, keys Keyring, owner Owner, a *meta.Artifact) error {
	if keys == nil {
		return errors.New("no artifact signing key configured")
	}
	got := a.Metadata[SignatureKey]
	if !strings.HasPrefix(got, signaturePrefix) {
		return fmt.Errorf("%w: the artifact of %s carries no signature", ErrUnsigned, owner)
	}
	for _, fresh := range []bool{false, true} {
		key, err := keys.Key(ctx, fresh)
		if err != nil {
			return err
		}
		if hmac.Equal([]byte(got), []byte(Signature(key, owner, a))) {
			return nil
		}
	}
	return fmt.Errorf("%w: the signature of %s's artifact does not match", ErrUnsigned, owner)
}

// Keyring gives the key artifacts are signed with. fresh asks for the key
// to be read again rather than from a cache (an implementation may still
// rate-limit rereads).
type Keyring interface {
	Key(ctx context.Context, fresh bool) ([]byte, error)
}

// StaticKey is a Keyring of one fixed key, for tests and for processes
// that read the key once themselves.
type StaticKey []byte

// Key returns k.
func (k StaticKey) Key(context.Context, bool) ([]byte, error) {
	if len(k) == 0 {
		return nil, errors.New("empty artifact signing key")
	}
	return k, nil
}
