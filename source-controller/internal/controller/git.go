package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitauth"
	"github.com/eddyops/eddy/pkg/gitref"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// gitAuth is how to reach the remote, built from spec.secretRef and
// spec.proxySecretRef (pkg/gitauth: Flux's keys, contract §3.1).
type gitAuth = gitauth.Auth

// target is what to check out, resolved from spec.ref and the remote's refs.
type target struct {
	// refName is fetched; empty with a commit and no branch: all branches.
	refName plumbing.ReferenceName
	// revRef prefixes the revision: branch or tag name, absolute ref for
	// spec.ref.name, empty for a bare commit.
	revRef string
	// hash is the commit expected; empty when unknown before fetching.
	hash string
	// commit is set for spec.ref.commit: fetch history and check out hash.
	commit bool
}

// revision formats the artifact revision for a commit hash.
// Flux compatible: `<ref>@sha1:<hex>`, or `sha1:<hex>` for a bare commit.
func (t target) revision(hash string) string {
	if t.revRef == "" {
		return "sha1:" + hash
	}
	return t.revRef + "@sha1:" + hash
}

// current reports whether the artifact revision rev is of the target's
// commit: its revision, or for a short commit SHA the same ref at a full
// SHA starting with it (so a short SHA does not refetch at each interval).
func (t target) current(rev string) bool {
	if t.hash == "" {
		return false
	}
	if rev == t.revision(t.hash) {
		return true
	}
	full, ok := strings.CutPrefix(rev, t.revision(""))
	return t.commit && ok && len(full) == 40 && strings.HasPrefix(full, t.hash)
}

// commitSHA is spec.ref.commit as accepted: 7 to 40 hex digits, lower case.
var commitSHA = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// commitHash resolves spec.ref.commit (lower case) in repo: a full SHA as
// it is; a prefix of 7 to 39 hex digits (beyond Flux, as Argo CD accepts a
// truncated SHA) to the one fetched commit it starts. A malformed SHA and a
// prefix of several commits stall; a prefix of none is not found (yet).
func commitHash(repo *git.Repository, sha string) (plumbing.Hash, error) {
	if !commitSHA.MatchString(sha) || sha == plumbing.ZeroHash.String() {
		return plumbing.ZeroHash, errStalling{fmt.Errorf("commit %q is not a SHA-1 of 7 to 40 hex digits", sha)}
	}
	if len(sha) == 40 {
		return plumbing.NewHash(sha), nil
	}
	iter, err := repo.CommitObjects()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var found []plumbing.Hash
	err = iter.ForEach(func(c *object.Commit) error {
		if strings.HasPrefix(c.Hash.String(), sha) {
			found = append(found, c.Hash)
		}
		return nil
	})
	switch {
	case err != nil:
		return plumbing.ZeroHash, err
	case len(found) == 0:
		return plumbing.ZeroHash, fmt.Errorf("unable to resolve commit object for '%s': no fetched commit starts with it", sha)
	case len(found) > 1:
		return plumbing.ZeroHash, errStalling{fmt.Errorf("commit %q is ambiguous: %d fetched commits start with it", sha, len(found))}
	}
	return found[0], nil
}

// errStalling marks errors that retrying cannot fix without a spec change.
type errStalling struct{ error }

func (e errStalling) Unwrap() error { return e.error }

// errEmptyRepository is returned for a remote without any commit.
var errEmptyRepository = errors.New("git repository is empty")

// listRemote returns the remote's references, name → hash, with annotated
// tags also as `<tag>^{}` → commit hash. It is one round trip and transfers
// no objects.
func listRemote(ctx context.Context, rawURL string, a *gitAuth) (map[string]string, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{
		Auth: a.Method, CABundle: a.CABundle, ClientCert: a.ClientCert, ClientKey: a.ClientKey,
		PeelingOption: git.AppendPeeled, ProxyOptions: a.Proxy,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, errEmptyRepository
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(refs))
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			out[r.Name().String()] = r.Hash().String()
		}
	}
	// A symbolic ref (HEAD, advertised as a symref) gets its target's
	// hash, so that ref.name HEAD resolves to the default branch.
	for _, r := range refs {
		if h, ok := out[r.Target().String()]; ok && r.Type() == plumbing.SymbolicReference {
			out[r.Name().String()] = h
		}
	}
	if len(out) == 0 {
		return nil, errEmptyRepository
	}
	return out, nil
}

// resolveTarget applies spec.ref to the remote's refs (nil for a commit
// without branch). Flux compatible precedence: commit, name, tag, semver,
// branch (default master).
func resolveTarget(ref *sourcev1.GitRepositoryRef, refs map[string]string) (target, error) {
	r := sourcev1.GitRepositoryRef{}
	if ref != nil {
		r = *ref
	}
	peeled := func(name string) (string, bool) {
		if h, ok := refs[name+"^{}"]; ok {
			return h, true
		}
		h, ok := refs[name]
		return h, ok
	}
	switch {
	case r.Commit != "":
		t := target{revRef: r.Branch, hash: strings.ToLower(r.Commit), commit: true}
		if r.Branch != "" {
			t.refName = plumbing.NewBranchReferenceName(r.Branch)
		}
		return t, nil
	case r.Name != "":
		h, ok := peeled(r.Name)
		if !ok {
			return target{}, fmt.Errorf("couldn't find remote ref %q", r.Name)
		}
		return target{refName: plumbing.ReferenceName(r.Name), revRef: r.Name, hash: h}, nil
	case r.Tag != "":
		name := plumbing.NewTagReferenceName(r.Tag)
		h, ok := peeled(name.String())
		if !ok {
			return target{}, fmt.Errorf("couldn't find remote ref %q", name)
		}
		return target{refName: name, revRef: r.Tag, hash: h}, nil
	case r.SemVer != "":
		var tags []string
		for name := range refs {
			if tag, ok := strings.CutPrefix(name, "refs/tags/"); ok && !strings.HasSuffix(tag, "^{}") {
				tags = append(tags, tag)
			}
		}
		bestTag, err := gitref.HighestSemverTag(r.SemVer, tags)
		var ce *gitref.ConstraintError
		if errors.As(err, &ce) {
			return target{}, errStalling{err}
		}
		if err != nil {
			return target{}, err
		}
		name := plumbing.NewTagReferenceName(bestTag)
		h, _ := peeled(name.String())
		return target{refName: name, revRef: bestTag, hash: h}, nil
	default:
		branch := r.Branch
		if branch == "" {
			branch = "master"
		}
		name := plumbing.NewBranchReferenceName(branch)
		h, ok := refs[name.String()]
		if !ok {
			return target{}, fmt.Errorf("couldn't find remote ref %q", name)
		}
		return target{refName: name, revRef: branch, hash: h}, nil
	}
}

// checkout fetches the target into dir (a new directory) and checks it out.
// It returns the commit checked out and, for an annotated tag target, the
// tag object (for spec.verify). Branch, tag and ref targets are fetched
// shallowly (depth 1); a commit target fetches history to find the commit.
//
// With sess (the listing's open session) and the refs it listed, a branch,
// tag or ref target is fetched over that session, without listing again.
func checkout(ctx context.Context, dir, rawURL string, a *gitAuth, t target, submodules bool, sparse []string,
	sess *remoteSession, refs map[string]string) (*object.Commit, *object.Tag, error) {
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, nil, err
	}
	rem, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	if err != nil {
		return nil, nil, err
	}
	opts := &git.FetchOptions{
		Auth: a.Method, CABundle: a.CABundle, ClientCert: a.ClientCert, ClientKey: a.ClientKey,
		Tags: git.NoTags, ProxyOptions: a.Proxy,
	}
	switch {
	case t.commit && t.refName == "":
		opts.RefSpecs = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}
	case t.commit:
		opts.RefSpecs = []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", t.refName, t.refName))}
	default:
		opts.RefSpecs = []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", t.refName, localRef(t.refName)))}
		opts.Depth = 1
	}
	if want, ok := refs[t.refName.String()]; ok && sess != nil && !t.commit {
		if err := sess.fetchShallow(ctx, repo, plumbing.NewHash(want), localRef(t.refName)); err != nil {
			return nil, nil, err
		}
	} else if err := rem.FetchContext(ctx, opts); err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return nil, nil, errEmptyRepository
		}
		return nil, nil, err
	}

	var hash plumbing.Hash
	var tag *object.Tag
	if t.commit {
		if hash, err = commitHash(repo, t.hash); err != nil {
			return nil, nil, err
		}
	} else {
		ref, err := repo.Reference(localRef(t.refName), true)
		if err != nil {
			return nil, nil, fmt.Errorf("couldn't find remote ref %q", t.refName)
		}
		hash = ref.Hash()
		if tag, err = repo.TagObject(hash); err == nil { // annotated tag: the commit it points at
			c, err := tag.Commit()
			if err != nil {
				return nil, nil, err
			}
			hash = c.Hash
		} else {
			tag = nil
		}
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to resolve commit object for '%s': %w", hash, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, nil, err
	}
	co := &git.CheckoutOptions{Hash: hash, Force: true}
	for _, d := range sparse {
		co.SparseCheckoutDirectories = append(co.SparseCheckoutDirectories, strings.TrimPrefix(filepath.ToSlash(d), "./"))
	}
	if err := wt.Checkout(co); err != nil {
		return nil, nil, fmt.Errorf("checkout of '%s' failed: %w", hash, err)
	}
	for _, d := range co.SparseCheckoutDirectories {
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d))); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("sparse checkout directory %q does not exist in commit '%s'", d, hash)
		}
	}
	if submodules {
		origin, err := remoteURL(rawURL)
		if err != nil {
			return nil, nil, err
		}
		if err := updateSubmodules(ctx, wt, rawURL, "", origin, a, int(git.DefaultSubmoduleRecursionDepth)); err != nil {
			return nil, nil, fmt.Errorf("submodule update failed: %w", err)
		}
	}
	return commit, tag, nil
}

// localRef is where a fetched ref is stored: its own name, but the
// remote's HEAD under refs/remotes/origin/HEAD (a fetch does not write the
// local HEAD).
func localRef(name plumbing.ReferenceName) plumbing.ReferenceName {
	if name == plumbing.HEAD {
		return "refs/remotes/origin/HEAD"
	}
	return name
}

// commitSubject is the first line of a commit message, at most 50 runes
// followed by "..." when cut. Flux compatible (NewArtifact event message).
func commitSubject(msg string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if utf8.RuneCountInString(line) > 50 {
		return string([]rune(line)[:50]) + "..."
	}
	return line
}

// describeGitError turns transport errors into stable messages that name
// the problem and never carry credentials.
func describeGitError(err error, rawURL string) string {
	var sub *submoduleError
	if errors.As(err, &sub) { // before the causes below, which would drop its path
		why := sub.err.Error()
		if sub.url != "" {
			why = describeGitError(sub.err, sub.url)
		}
		return sub.describe(why)
	}
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return "authentication required"
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return "authorization failed"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return "repository not found"
	case errors.As(err, &dns):
		return fmt.Sprintf("no such host %q", dns.Name)
	case errors.As(err, &op) && op.Op == "dial":
		return op.Err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return redact.Message(strings.ReplaceAll(err.Error(), rawURL, redact.URL(rawURL)))
}

// parseURL parses spec.url. Its error is Flux's `failed to parse url
// '<url>': <url.Parse's error>`, with the credentials masked in both
// (redact.URL: an SSH login name is kept, any other userinfo masked); a
// URL without a host fails with `missing host`.
func parseURL(raw string) (*url.URL, error) {
	u, err := redact.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("failed to parse url '%s': %w", redact.URL(raw), err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("failed to parse url '%s': missing host", redact.URL(raw))
	}
	return u, nil
}

// maxAbandonedSSH caps the SSH operations that bounded abandoned and that
// still run: each holds a goroutine, a connection and its directory until
// its server answers or the connection breaks. Operations that a reconcile
// still waits for are bounded by --concurrent and not counted.
const maxAbandonedSSH = 32

var (
	abandonedSSH atomic.Int32
	// abandonedDirs holds the working directories of abandoned operations:
	// their goroutine removes them, not the reconcile that made them.
	abandonedDirs sync.Map
)

// errTooManyAbandonedSSH is returned while maxAbandonedSSH abandoned
// operations still run.
var errTooManyAbandonedSSH = fmt.Errorf("%d abandoned SSH operations still wait for their servers", maxAbandonedSSH)

// bounded runs fn, giving up when ctx ends. go-git bounds HTTP operations
// by the context, and SSH ones once connected, but not the SSH handshake
// (its dialer offers no hook for a deadline on the connection): a server
// that accepts and never answers would hold a worker forever. For SSH, fn
// runs apart and is abandoned when ctx ends; the abandoned goroutine then
// owns dir (the directory fn writes into, "" for none) and removes it when
// fn returns, so nothing writes into a directory already removed. While
// maxAbandonedSSH abandoned operations still run, bounded fails at once.
func bounded(ctx context.Context, u *url.URL, dir string, fn func() error) error {
	if u.Scheme != "ssh" {
		return fn()
	}
	if abandonedSSH.Load() >= maxAbandonedSSH {
		return errTooManyAbandonedSSH
	}
	var (
		mu                  sync.Mutex
		finished, abandoned bool
		done                = make(chan error, 1)
	)
	go func() {
		err := fn()
		mu.Lock()
		if abandoned {
			if dir != "" {
				os.RemoveAll(dir)
				abandonedDirs.Delete(dir)
			}
			abandonedSSH.Add(-1)
		}
		finished = true
		mu.Unlock()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return <-done
		}
		abandoned = true
		abandonedSSH.Add(1)
		if dir != "" {
			abandonedDirs.Store(dir, true)
		}
		return ctx.Err()
	}
}

// removeWorkDir removes a working directory unless an abandoned SSH
// operation (bounded) still owns it.
func removeWorkDir(dir string) {
	if _, owned := abandonedDirs.Load(dir); !owned {
		os.RemoveAll(dir)
	}
}
