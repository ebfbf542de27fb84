package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the repositories below a root over SSH, running the real
// git-upload-pack and git-receive-pack for each session, and accepts only
// one public key.
type SSHServer struct {
	// URL is the base URL, e.g. ssh://git@127.0.0.1:41235; a repository's URL
	// is URL + "/" + its path below the root.
	URL string
	// KnownHosts is a known_hosts line for the server's host key.
	KnownHosts []byte

	listener net.Listener
	srv      *gliderssh.Server
}

// StartSSH starts an SSH server on a free loopback port for the
// repositories below root; clients must authenticate with authorized.
func StartSSH(root string, authorized gossh.PublicKey) (*SSHServer, error) {
	_, hostKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := gossh.NewSignerFromKey(hostKey)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SSHServer{listener: l}
	s.srv = &gliderssh.Server{
		Handler: func(sess gliderssh.Session) { _ = sess.Exit(serveGit(root, sess)) },
		PublicKeyHandler: func(_ gliderssh.Context, key gliderssh.PublicKey) bool {
			return gliderssh.KeysEqual(key, authorized)
		},
	}
	s.srv.AddHostKey(signer)
	go func() { _ = s.srv.Serve(l) }()
	addr := l.Addr().String()
	s.URL = "ssh://git@" + addr
	s.KnownHosts = []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, signer.PublicKey()) + "\n")
	return s, nil
}

// serveGit runs the session's git-upload-pack or git-receive-pack command on
// a repository below root and returns its exit status.
func serveGit(root string, sess gliderssh.Session) int {
	args := sess.Command()
	if len(args) != 2 || (args[0] != "git-upload-pack" && args[0] != "git-receive-pack") {
		fmt.Fprintln(sess.Stderr(), "only git-upload-pack and git-receive-pack are served")
		return 1
	}
	rel := filepath.Clean("/" + strings.Trim(args[1], "'\""))
	cmd := exec.Command(args[0], filepath.Join(root, rel))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sess, sess, sess.Stderr()
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(sess.Stderr(), err)
		return 1
	}
	return 0
}

// Close stops the server.
func (s *SSHServer) Close() { _ = s.srv.Close() }
