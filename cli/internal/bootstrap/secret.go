package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Keys of the source Secret, as flux's sourcesecret writes them.
const (
	UsernameKey    = "username"
	PasswordKey    = "password"
	BearerTokenKey = "bearerToken"
	CACrtKey       = "ca.crt"
	IdentityKey    = "identity"
	IdentityPubKey = "identity.pub"
	KnownHostsKey  = "known_hosts"
)

// KeyPair is an SSH key: the private key in PEM and the public key in
// authorized_keys format ("ecdsa-sha2-nistp384 AAAA…\n").
type KeyPair struct {
	PrivateKey []byte
	PublicKey  []byte
}

// GenerateKeyPair makes a new ECDSA P-384 key, flux's default deploy key
// (--ssh-key-algorithm ecdsa, --ssh-ecdsa-curve p384); the private key is
// PEM "EC PRIVATE KEY" (SEC 1), as flux's generator writes it.
func GenerateKeyPair() (*KeyPair, error) {
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	pub, err := gossh.NewPublicKey(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		PublicKey:  gossh.MarshalAuthorizedKey(pub),
	}, nil
}

// LoadKeyPair parses a private key file (--private-key-file), decrypting it
// with password when one is given, and derives its public key.
func LoadKeyPair(private []byte, password string) (*KeyPair, error) {
	var s gossh.Signer
	var err error
	if password != "" {
		s, err = gossh.ParsePrivateKeyWithPassphrase(private, []byte(password))
	} else {
		s, err = gossh.ParsePrivateKey(private)
	}
	if err != nil {
		var missing *gossh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("the private key file is encrypted: pass its passphrase with --password")
		}
		return nil, fmt.Errorf("reading the private key file: %w", err)
	}
	return &KeyPair{PrivateKey: private, PublicKey: gossh.MarshalAuthorizedKey(s.PublicKey())}, nil
}

// ScanHostKey connects to host ("name" or "name:port", port 22 by default)
// and returns a known_hosts line for the key it presents, trusted on first
// use as flux's ScanHostKey does; the connection is not authenticated.
func ScanHostKey(ctx context.Context, host string) ([]byte, error) {
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "22")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("SSH key scan for host %s failed: %w", host, err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	var line string
	errGot := errors.New("host key received")
	cfg := &gossh.ClientConfig{
		User: "git",
		HostKeyCallback: func(_ string, _ net.Addr, key gossh.PublicKey) error {
			line = knownhosts.Line([]string{knownhosts.Normalize(host)}, key)
			return errGot
		},
	}
	if _, _, _, err := gossh.NewClientConn(conn, host, cfg); line == "" {
		return nil, fmt.Errorf("SSH key scan for host %s failed: %w", host, err)
	}
	return []byte(line), nil
}

// SecretOptions are the credentials the cluster's GitRepository uses.
type SecretOptions struct {
	// Username and Password (HTTPS basic auth, --token-auth), or the SSH
	// key's passphrase (Password with KeyPair).
	Username, Password string
	// BearerToken (--with-bearer-token).
	BearerToken string
	// CACrt is the CA bundle (--ca-file).
	CACrt []byte
	// KeyPair and KnownHosts for SSH.
	KeyPair    *KeyPair
	KnownHosts []byte
}

// Empty reports whether no credentials were given: an existing Secret is
// then kept as it is (flux).
func (o SecretOptions) Empty() bool {
	return o.KeyPair == nil && len(o.CACrt) == 0 && o.Username+o.Password+o.BearerToken == ""
}

// SecretData returns the Secret's string data with flux's keys: username
// and password (both set), bearerToken, ca.crt, and for SSH identity,
// identity.pub, known_hosts and the key's password.
func SecretData(o SecretOptions) map[string]string {
	d := map[string]string{}
	if o.Username != "" && o.Password != "" {
		d[UsernameKey], d[PasswordKey] = o.Username, o.Password
	}
	if o.BearerToken != "" {
		d[BearerTokenKey] = o.BearerToken
	}
	if len(o.CACrt) > 0 {
		d[CACrtKey] = string(o.CACrt)
	}
	if o.KeyPair != nil && len(o.KnownHosts) > 0 {
		d[IdentityKey] = string(o.KeyPair.PrivateKey)
		d[IdentityPubKey] = string(o.KeyPair.PublicKey)
		d[KnownHostsKey] = strings.TrimSpace(string(o.KnownHosts))
		if o.Password != "" {
			d[PasswordKey] = o.Password
		}
	}
	return d
}
