package controller

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// This file verifies Git's SSH signatures (`gpg.format ssh`): OpenSSH's
// SSHSIG format (PROTOCOL.sshsig) in namespace "git", over keys in the
// authorized_keys format.

const (
	sshsigMagic     = "SSHSIG"
	sshsigNamespace = "git"
	sshsigArmorHead = "-----BEGIN SSH SIGNATURE-----"
	sshsigArmorTail = "-----END SSH SIGNATURE-----"
)

// sshsig is a parsed SSHSIG blob.
type sshsig struct {
	publicKey     ssh.PublicKey
	namespace     string
	reserved      string
	hashAlgorithm string
	signature     *ssh.Signature
}

// parseSSHSig unarmors and parses an SSH signature.
func parseSSHSig(armored string) (*sshsig, error) {
	body, head := strings.CutPrefix(strings.TrimSpace(armored), sshsigArmorHead)
	body, tail := strings.CutSuffix(body, sshsigArmorTail)
	if !head || !tail {
		return nil, errors.New("unable to unarmor SSH signature: invalid armor")
	}
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, fmt.Errorf("unable to unarmor SSH signature: %w", err)
	}
	rest, ok := bytes.CutPrefix(blob, []byte(sshsigMagic))
	if !ok {
		return nil, errors.New("unable to parse SSH signature: invalid magic preamble")
	}
	var raw struct {
		Version       uint32
		PublicKey     []byte
		Namespace     string
		Reserved      string
		HashAlgorithm string
		Signature     []byte
	}
	if err := ssh.Unmarshal(rest, &raw); err != nil {
		return nil, fmt.Errorf("unable to parse SSH signature: %w", err)
	}
	if raw.Version != 1 {
		return nil, fmt.Errorf("unable to parse SSH signature: unsupported version %d", raw.Version)
	}
	pub, err := ssh.ParsePublicKey(raw.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("unable to parse SSH signature's public key: %w", err)
	}
	sig := &ssh.Signature{}
	if err := ssh.Unmarshal(raw.Signature, sig); err != nil {
		return nil, fmt.Errorf("unable to parse SSH signature: %w", err)
	}
	return &sshsig{publicKey: pub, namespace: raw.Namespace, reserved: raw.Reserved, hashAlgorithm: raw.HashAlgorithm, signature: sig}, nil
}

// signedData is what an SSHSIG signature signs for message.
func (s *sshsig) signedData(message []byte) ([]byte, error) {
	var digest []byte
	switch s.hashAlgorithm {
	case "sha256":
		h := sha256.Sum256(message)
		digest = h[:]
	case "sha512":
		h := sha512.Sum512(message)
		digest = h[:]
	default:
		return nil, fmt.Errorf("unsupported hash algorithm %q", s.hashAlgorithm)
	}
	return append([]byte(sshsigMagic), ssh.Marshal(struct {
		Namespace, Reserved, HashAlgorithm string
		Hash                               []byte
	}{s.namespace, s.reserved, s.hashAlgorithm, digest})...), nil
}

// verifySSH checks the SSH signature sig of payload with each key of the
// authorized_keys texts and returns the SHA256 fingerprint of the key that
// made it. A text that does not parse is skipped; its error is returned
// only when none parsed.
func verifySSH(sig string, payload []byte, authorizedKeys []string) (string, error) {
	s, err := parseSSHSig(sig)
	if err != nil {
		return "", err
	}
	if s.namespace != sshsigNamespace {
		return "", fmt.Errorf("signature namespace %q is not %q", s.namespace, sshsigNamespace)
	}
	data, err := s.signedData(payload)
	if err != nil {
		return "", err
	}
	var readErr error
	tried := false
	for _, text := range authorizedKeys {
		keys, err := parseAuthorizedKeys(text)
		if err != nil {
			if readErr == nil {
				readErr = fmt.Errorf("unable to parse authorized keys: %w", err)
			}
			continue
		}
		tried = true
		for _, k := range keys {
			if bytes.Equal(k.Marshal(), s.publicKey.Marshal()) && k.Verify(data, s.signature) == nil {
				return ssh.FingerprintSHA256(k), nil
			}
		}
	}
	if !tried && readErr != nil {
		return "", readErr
	}
	return "", fmt.Errorf("unable to verify payload with any of the given authorized keys: %w", errNoMatchingKey)
}

// parseAuthorizedKeys parses an authorized_keys text; blank lines and
// comments are skipped.
func parseAuthorizedKeys(text string) ([]ssh.PublicKey, error) {
	var keys []ssh.PublicKey
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}
