package source

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"
)

// OpenPGPKey reads an OpenPGP signing key from a signing Secret's data
// (Flux's keys): `git.asc`, an armored private key, decrypted with
// `passphrase` when it is encrypted. The first entity of the key ring
// signs.
func OpenPGPKey(data map[string][]byte) (*openpgp.Entity, error) {
	asc := data["git.asc"]
	if len(asc) == 0 {
		return nil, errors.New("signing key secret has no 'git.asc'")
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(asc))
	if err != nil || len(ring) == 0 {
		return nil, errors.New("'git.asc' is not an armored OpenPGP key ring")
	}
	e := ring[0]
	if e.PrivateKey == nil {
		return nil, errors.New("'git.asc' holds no private key")
	}
	pass := data["passphrase"]
	if e.PrivateKey.Encrypted {
		if len(pass) == 0 {
			return nil, errors.New("'git.asc' is encrypted and the secret has no 'passphrase'")
		}
		if err := e.PrivateKey.Decrypt(pass); err != nil {
			return nil, errors.New("'git.asc' cannot be decrypted with 'passphrase'")
		}
	}
	for _, sub := range e.Subkeys {
		if sub.PrivateKey != nil && sub.PrivateKey.Encrypted && len(pass) > 0 {
			if err := sub.PrivateKey.Decrypt(pass); err != nil {
				return nil, errors.New("a subkey of 'git.asc' cannot be decrypted with 'passphrase'")
			}
		}
	}
	return e, nil
}

// SSHSigner reads an SSH signing key from a signing Secret's data (Flux's
// keys for signingKey.type ssh): `identity`, an OpenSSH private key,
// decrypted with `password` when set. The commit signature is an
// armored SSHSIG (namespace "git", SHA-512), what `git commit -S` makes
// with gpg.format=ssh.
func SSHSigner(data map[string][]byte) (*SSHSig, error) {
	identity := data["identity"]
	if len(identity) == 0 {
		return nil, errors.New("signing key secret has no 'identity'")
	}
	var signer ssh.Signer
	var err error
	if pass := data["password"]; len(pass) > 0 {
		signer, err = ssh.ParsePrivateKeyWithPassphrase(identity, pass)
	} else {
		signer, err = ssh.ParsePrivateKey(identity)
	}
	if err != nil {
		return nil, errors.New("'identity' is not an OpenSSH private key (or 'password' does not decrypt it)")
	}
	return &SSHSig{signer: signer}, nil
}

// SSHSig signs Git objects with an SSH key (go-git's Signer).
type SSHSig struct {
	signer ssh.Signer
}

// PublicKey is the signing key's public half.
func (s *SSHSig) PublicKey() ssh.PublicKey { return s.signer.PublicKey() }

// Sign returns the armored SSHSIG signature of message.
func (s *SSHSig) Sign(message io.Reader) ([]byte, error) {
	const namespace, hashAlg = "git", "sha512"
	h := sha512.New()
	if _, err := io.Copy(h, message); err != nil {
		return nil, err
	}
	signed := append([]byte("SSHSIG"), ssh.Marshal(struct {
		Namespace, Reserved, HashAlg, Hash string
	}{namespace, "", hashAlg, string(h.Sum(nil))})...)
	var sig *ssh.Signature
	var err error
	if as, ok := s.signer.(ssh.AlgorithmSigner); ok && s.signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, signed, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = s.signer.Sign(rand.Reader, signed)
	}
	if err != nil {
		return nil, err
	}
	blob := append([]byte("SSHSIG"), ssh.Marshal(struct {
		Version                           uint32
		PublicKey                         string
		Namespace, Reserved, HashAlg, Sig string
	}{1, string(s.signer.PublicKey().Marshal()), namespace, "", hashAlg, string(ssh.Marshal(sig))})...)
	enc := base64.StdEncoding.EncodeToString(blob)
	var b strings.Builder
	b.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return []byte(b.String()), nil
}
