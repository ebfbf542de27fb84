// Package sopstest encrypts test data the way the sops command does, with
// the sops library and freshly generated age (filippo.io/age) and OpenPGP
// (ProtonMail/go-crypto) keys, all in memory. For tests only.
package sopstest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/eddyops/eddy/kustomize-controller/internal/sopshelper"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/pgp"
)

// AgeKey is a generated age identity: Identity is the content of an
// `.agekey` file, Recipient its public key.
type AgeKey struct{ Identity, Recipient string }

// NewAgeKey generates an age X25519 identity.
func NewAgeKey() (AgeKey, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return AgeKey{}, err
	}
	return AgeKey{Identity: "# test key\n" + id.String() + "\n", Recipient: id.Recipient().String()}, nil
}

// PGPKey is a generated OpenPGP key: Armored is the private key (the
// content of an `.asc` file), Fingerprint the primary key's.
type PGPKey struct {
	Armored     string
	Fingerprint string
	entity      *openpgp.Entity
}

// NewPGPKey generates an unprotected OpenPGP key.
func NewPGPKey(name string) (PGPKey, error) {
	e, err := openpgp.NewEntity(name, "test", name+"@example.com", nil)
	if err != nil {
		return PGPKey{}, err
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return PGPKey{}, err
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		return PGPKey{}, err
	}
	if err := w.Close(); err != nil {
		return PGPKey{}, err
	}
	return PGPKey{Armored: buf.String(), Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)), entity: e}, nil
}

// Options are sops' creation rules for one file.
type Options struct {
	Age                   []AgeKey
	PGP                   []PGPKey
	EncryptedRegex        string
	EncryptedCommentRegex string
	MACOnlyEncrypted      bool
	// Keys are master keys of sops' key packages (hcvault, kms, azkv,
	// gcpkms) with their credentials applied: they encrypt the data key.
	Keys []keys.MasterKey
}

// Encrypt encrypts plain, a file of format f, as `sops encrypt` does.
func Encrypt(plain []byte, f formats.Format, o Options) ([]byte, error) {
	st := sopshelper.StoreFor(f)
	branches, err := st.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	var group sops.KeyGroup
	srv := &encServer{pgp: map[string]*openpgp.Entity{}, keys: map[string]keys.MasterKey{}}
	for _, k := range o.Keys {
		group = append(group, k)
		kk := keyservice.KeyFromMasterKey(k)
		srv.keys[kk.String()] = k
	}
	for _, k := range o.Age {
		mk, err := sopsage.MasterKeyFromRecipient(k.Recipient)
		if err != nil {
			return nil, err
		}
		group = append(group, mk)
	}
	for _, k := range o.PGP {
		group = append(group, pgp.NewMasterKeyFromFingerprint(k.Fingerprint))
		srv.pgp[k.Fingerprint] = k.entity
	}
	md := sops.Metadata{
		KeyGroups:             []sops.KeyGroup{group},
		EncryptedRegex:        o.EncryptedRegex,
		EncryptedCommentRegex: o.EncryptedCommentRegex,
		MACOnlyEncrypted:      o.MACOnlyEncrypted,
		Version:               "3.13.3",
	}
	if o.EncryptedRegex == "" && o.EncryptedCommentRegex == "" {
		md.UnencryptedSuffix = "_unencrypted"
	}
	tree := sops.Tree{Branches: branches, Metadata: md}
	key, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(srv)})
	if len(errs) > 0 {
		return nil, fmt.Errorf("data key: %v", errs)
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(key, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return st.EmitEncryptedFile(tree)
}

var _ keys.MasterKey = (*pgp.MasterKey)(nil)

// encServer encrypts a data key for age recipients (with the sops library)
// and OpenPGP keys (in memory, without a GnuPG home).
type encServer struct {
	pgp  map[string]*openpgp.Entity
	keys map[string]keys.MasterKey
}

func (s *encServer) Encrypt(_ context.Context, req *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	switch k := req.Key.KeyType.(type) {
	case *keyservice.Key_AgeKey:
		mk, err := sopsage.MasterKeyFromRecipient(k.AgeKey.Recipient)
		if err != nil {
			return nil, err
		}
		if err := mk.Encrypt(req.Plaintext); err != nil {
			return nil, err
		}
		return &keyservice.EncryptResponse{Ciphertext: mk.EncryptedDataKey()}, nil
	case *keyservice.Key_PgpKey:
		e := s.pgp[k.PgpKey.Fingerprint]
		if e == nil {
			return nil, fmt.Errorf("unknown PGP key %s", k.PgpKey.Fingerprint)
		}
		var buf bytes.Buffer
		aw, err := armor.Encode(&buf, "PGP MESSAGE", nil)
		if err != nil {
			return nil, err
		}
		w, err := openpgp.Encrypt(aw, []*openpgp.Entity{e}, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(req.Plaintext); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if err := aw.Close(); err != nil {
			return nil, err
		}
		return &keyservice.EncryptResponse{Ciphertext: buf.Bytes()}, nil
	}
	if mk := s.keys[req.Key.String()]; mk != nil {
		if err := mk.Encrypt(req.Plaintext); err != nil {
			return nil, err
		}
		return &keyservice.EncryptResponse{Ciphertext: mk.EncryptedDataKey()}, nil
	}
	return nil, fmt.Errorf("unsupported key type %T", req.Key.KeyType)
}

func (s *encServer) Decrypt(context.Context, *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	return nil, fmt.Errorf("not a decryption service")
}
