package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/eddyops/eddy/pkg/redact"
)

// Remote is the repository bootstrap clones and pushes to, and how it
// authenticates there (the user's credentials, not necessarily the
// cluster's).
type Remote struct {
	// URL is the repository's address (http, https or ssh).
	URL string
	// Branch is cloned, committed to and pushed.
	Branch string
	// Username and Password for HTTP(S) basic auth; BearerToken instead.
	Username, Password, BearerToken string
	// CABundle is trusted for HTTPS besides the system's roots.
	CABundle []byte
	// PrivateKey (PEM, with Password as its passphrase) authenticates over
	// SSH as the URL's user; without it the SSH agent does. KnownHosts
	// (one known_hosts line) pins the server's key; without it
	// ~/.ssh/known_hosts does.
	PrivateKey []byte
	KnownHosts []byte
}

func (r Remote) auth() (transport.AuthMethod, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
		if r.BearerToken != "" {
			return &githttp.TokenAuth{Token: r.BearerToken}, nil
		}
		if r.Username != "" || r.Password != "" {
			return &githttp.BasicAuth{Username: r.Username, Password: r.Password}, nil
		}
		return nil, nil
	case "ssh":
		user := "git"
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		var pk *gitssh.PublicKeys
		if len(r.PrivateKey) > 0 {
			if pk, err = gitssh.NewPublicKeys(user, r.PrivateKey, r.Password); err != nil {
				return nil, fmt.Errorf("reading the private key file: %w", err)
			}
		} else {
			agent, err := gitssh.NewSSHAgentAuth(user)
			if err != nil {
				return nil, fmt.Errorf("no --private-key-file and no SSH agent (%v): pass --private-key-file", err)
			}
			if len(r.KnownHosts) > 0 {
				agent.HostKeyCallback, err = fixedHostKey(r.KnownHosts)
			}
			return agent, err
		}
		if len(r.KnownHosts) > 0 {
			pk.HostKeyCallback, err = fixedHostKey(r.KnownHosts)
		}
		return pk, err
	default:
		return nil, fmt.Errorf("scheme %q is not supported: use an ssh://, https:// or http:// URL", u.Scheme)
	}
}

func fixedHostKey(line []byte) (gossh.HostKeyCallback, error) {
	_, _, key, _, _, err := gossh.ParseKnownHosts(line)
	if err != nil {
		return nil, fmt.Errorf("parsing the host key: %w", err)
	}
	return gossh.FixedHostKey(key), nil
}

// Checkout is a clone of the branch in a local directory.
type Checkout struct {
	Dir    string
	remote Remote
	auth   transport.AuthMethod
	repo   *git.Repository
	// base is the branch's commit when cloned ("" for a new branch).
	base string
}

// Clone clones remote's branch into dir (an empty directory). An empty
// repository gives a new repository on that branch, whose first push
// creates it (flux); a missing branch of a non-empty one is an error. The
// error is one line without credentials, saying what to check.
func Clone(ctx context.Context, dir string, remote Remote) (*Checkout, error) {
	auth, err := remote.auth()
	if err != nil {
		return nil, err
	}
	co := &Checkout{Dir: dir, remote: remote, auth: auth}
	co.repo, err = git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL: remote.URL, Auth: auth, CABundle: remote.CABundle,
		ReferenceName: plumbing.NewBranchReferenceName(remote.Branch), SingleBranch: true,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		if err := emptyDir(dir); err != nil {
			return nil, err
		}
		return co, co.initEmpty()
	}
	if err != nil {
		return nil, cloneError(remote, err)
	}
	co.base = co.Head()
	return co, nil
}

func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// initEmpty makes a repository whose HEAD is the (unborn) branch, with
// origin the remote.
func (co *Checkout) initEmpty() (err error) {
	if co.repo, err = git.PlainInit(co.Dir, false); err != nil {
		return err
	}
	if _, err = co.repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{co.remote.URL}}); err != nil {
		return err
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(co.remote.Branch))
	return co.repo.Storer.SetReference(head)
}

// RedactURL drops the user information (credentials) from a URL for
// messages.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, hasPass := u.User.Password(); hasPass || u.Scheme != "ssh" {
		u.User = nil
	}
	return u.String()
}

func cloneError(r Remote, err error) error {
	where := RedactURL(r.URL)
	var noRef git.NoMatchingRefSpecError
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("cloning %s: authentication failed: check the credentials (--username/--password, --token-auth, --private-key-file)", where)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return fmt.Errorf("cloning %s: repository not found: check --url", where)
	case errors.As(err, &noRef), errors.Is(err, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("cloning %s: branch %q not found: create it or pass an existing --branch", where, r.Branch)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("cloning %s: timed out: check --url and the network, or raise --timeout", where)
	}
	return fmt.Errorf("cloning %s: %s", where, redact.NewValues("***", []string{r.Password}).Mask(err.Error()))
}

// Head returns the hash of the checked-out commit ("" before the first).
func (co *Checkout) Head() string {
	ref, err := co.repo.Head()
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// ReadFile returns the content of a file of the work tree (slash path), nil
// when it does not exist.
func (co *Checkout) ReadFile(rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(co.Dir, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, co.relErr(err)
}

// relErr names a file error's path relative to the work tree: the
// temporary clone's directory means nothing to the user.
func (co *Checkout) relErr(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	rel, rerr := filepath.Rel(co.Dir, pe.Path)
	if rerr != nil || strings.HasPrefix(rel, "..") {
		return err
	}
	return fmt.Errorf("%s %s: %w", pe.Op, filepath.ToSlash(rel), pe.Err)
}

// Commit writes files (slash path → content), stages them and commits with
// msg as author; it returns the new commit's hash, or "" when the files
// already had that content in the last commit (no commit).
func (co *Checkout) Commit(files map[string]string, msg string, author object.Signature) (string, error) {
	wt, err := co.repo.Worktree()
	if err != nil {
		return "", err
	}
	for rel, content := range files {
		if err := writeFile(co, rel, content); err != nil {
			return "", err
		}
		if _, err := wt.Add(rel); err != nil {
			return "", err
		}
	}
	st, err := wt.Status()
	if err != nil {
		return "", err
	}
	changed := false
	for rel := range files {
		if fs := st.File(rel); fs.Staging != git.Unmodified && fs.Staging != git.Untracked {
			changed = true
		}
	}
	if !changed {
		return "", nil
	}
	author.When = time.Now()
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &author})
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// ErrConflict is returned by Push when the branch moved on the remote since
// the clone.
var ErrConflict = errors.New("the branch changed on the remote")

// Push pushes the branch to the remote; ErrConflict when it is not a
// fast-forward.
func (co *Checkout) Push(ctx context.Context) error {
	ref := plumbing.NewBranchReferenceName(co.remote.Branch)
	err := co.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: "origin", Auth: co.auth, CABundle: co.remote.CABundle,
		RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)},
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.ErrNonFastForwardUpdate), strings.Contains(err.Error(), "non-fast-forward"), strings.Contains(err.Error(), "fetch first"):
		return ErrConflict
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("pushing to %s: not allowed: the credentials need write access to the repository", RedactURL(co.remote.URL))
	case co.moved(ctx):
		// A push racing another one on the server fails its ref update
		// ("failed to update ref") rather than as a non-fast-forward.
		return ErrConflict
	}
	return fmt.Errorf("pushing to %s: %s", RedactURL(co.remote.URL), err)
}

// moved reports whether the remote branch is no longer the commit the
// clone started from; false when the remote cannot be listed.
func (co *Checkout) moved(ctx context.Context) bool {
	rem, err := co.repo.Remote("origin")
	if err != nil {
		return false
	}
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: co.auth, CABundle: co.remote.CABundle})
	if err != nil {
		return false
	}
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName(co.remote.Branch) {
			return r.Hash().String() != co.base
		}
	}
	return false
}

// path is a slash path of the work tree as a local path.
func (co *Checkout) path(rel string) string { return filepath.Join(co.Dir, filepath.FromSlash(rel)) }

func writeFile(co *Checkout, rel, content string) error {
	p := co.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return co.relErr(err)
	}
	return co.relErr(os.WriteFile(p, []byte(content), 0o644))
}
