package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/eddyops/eddy/pkg/gitref"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Ref is what to check out: a GitRepository spec.ref (or an
// ImageUpdateAutomation's git.checkout.ref). Flux's precedence: Commit,
// Name, Tag, SemVer, Branch; none set is branch master.
type Ref struct {
	Branch, Tag, SemVer, Name, Commit string
}

// Checkout is a clone of a remote in a local directory, with its work tree
// at the checked-out commit.
type Checkout struct {
	// Dir is the work tree.
	Dir  string
	URL  string
	Repo *git.Repository
	auth *Auth
	// Branch is the checked-out branch, "" when a tag, semver, name or
	// commit without branch was checked out.
	Branch string
	// Head is the checked-out commit.
	Head plumbing.Hash
}

// remoteName is the clone's only remote.
const remoteName = "origin"

// Clone clones rawURL into dir (a new or empty directory) and checks out
// ref. A branch is fetched with its whole history (the update is then
// committed on it and pushed); a tag or semver checkout resolves the
// remote's tags first (Masterminds semver v3 constraint, highest match).
// Errors quote no URL credentials.
func Clone(ctx context.Context, rawURL string, auth *Auth, ref Ref, dir string) (*Checkout, error) {
	c, err := cloneInto(ctx, rawURL, auth, ref, dir)
	return c, mask(err)
}

func cloneInto(ctx context.Context, rawURL string, auth *Auth, ref Ref, dir string) (*Checkout, error) {
	if auth == nil {
		auth = &Auth{}
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{rawURL}}); err != nil {
		return nil, err
	}
	c := &Checkout{Dir: dir, URL: rawURL, Repo: repo, auth: auth}
	refName, err := c.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	// A branch is fetched as origin's, so that a later fetch of the moved
	// branch (push retry) does not write the checked-out branch.
	local := refName
	if refName.IsBranch() {
		local = plumbing.NewRemoteReferenceName(remoteName, refName.Short())
	}
	spec := []config.RefSpec{config.RefSpec("+" + refName.String() + ":" + local.String())}
	if ref.Commit != "" && ref.Branch == "" {
		spec = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}
	}
	if err := c.fetch(ctx, spec); err != nil {
		return nil, err
	}
	hash, err := c.target(ref, local)
	if err != nil {
		return nil, err
	}
	if refName.IsBranch() && ref.Commit == "" {
		c.Branch = refName.Short()
		if err := c.setBranch(c.Branch, hash); err != nil {
			return nil, err
		}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	opts := &git.CheckoutOptions{Hash: hash, Force: true}
	if c.Branch != "" {
		opts = &git.CheckoutOptions{Branch: refName, Force: true}
	}
	if err := wt.Checkout(opts); err != nil {
		return nil, fmt.Errorf("checkout of '%s' failed: %w", hash, err)
	}
	c.Head = hash
	return c, nil
}

// resolve returns the remote ref to fetch for ref.
func (c *Checkout) resolve(ctx context.Context, ref Ref) (plumbing.ReferenceName, error) {
	switch {
	case ref.Commit != "" && ref.Branch == "":
		return "", nil
	case ref.Commit != "":
		return plumbing.NewBranchReferenceName(ref.Branch), nil
	case ref.Name != "":
		return plumbing.ReferenceName(ref.Name), nil
	case ref.Tag != "":
		return plumbing.NewTagReferenceName(ref.Tag), nil
	case ref.SemVer != "":
		return c.semverTag(ctx, ref.SemVer)
	case ref.Branch != "":
		return plumbing.NewBranchReferenceName(ref.Branch), nil
	}
	return plumbing.NewBranchReferenceName("master"), nil
}

// semverTag returns the remote's highest tag matching constraint
// (gitref.HighestSemverTag, as source-controller picks it).
func (c *Checkout) semverTag(ctx context.Context, constraint string) (plumbing.ReferenceName, error) {
	// A bad constraint fails before any request.
	if _, err := semver.NewConstraint(constraint); err != nil {
		return "", &gitref.ConstraintError{Err: err}
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{c.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: c.auth.Method, CABundle: c.auth.CABundle,
		ClientCert: c.auth.ClientCert, ClientKey: c.auth.ClientKey, ProxyOptions: c.auth.Proxy})
	if err != nil {
		return "", err
	}
	var tags []string
	for _, r := range refs {
		if r.Name().IsTag() {
			tags = append(tags, r.Name().Short())
		}
	}
	tag, err := gitref.HighestSemverTag(constraint, tags)
	if err != nil {
		return "", err
	}
	return plumbing.NewTagReferenceName(tag), nil
}

// target returns the commit to check out once fetched.
func (c *Checkout) target(ref Ref, refName plumbing.ReferenceName) (plumbing.Hash, error) {
	if ref.Commit != "" {
		h := plumbing.NewHash(strings.ToLower(ref.Commit))
		if _, err := c.Repo.CommitObject(h); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit '%s' not found", ref.Commit)
		}
		return h, nil
	}
	r, err := c.Repo.Reference(refName, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("couldn't find remote ref %q", refName)
	}
	h := r.Hash()
	if tag, err := c.Repo.TagObject(h); err == nil { // annotated tag
		commit, err := tag.Commit()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = commit.Hash
	}
	return h, nil
}

// fetch fetches specs from the remote, without tags.
func (c *Checkout) fetch(ctx context.Context, specs []config.RefSpec) error {
	err := c.Repo.FetchContext(ctx, &git.FetchOptions{RemoteName: remoteName, RefSpecs: specs, Tags: git.NoTags,
		Auth: c.auth.Method, CABundle: c.auth.CABundle, ClientCert: c.auth.ClientCert, ClientKey: c.auth.ClientKey, ProxyOptions: c.auth.Proxy})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// Revision is Flux's observedSourceRevision of the checkout:
// `<branch>@sha1:<hash>`, or `sha1:<hash>` without a branch.
func (c *Checkout) Revision() string {
	if c.Branch == "" {
		return "sha1:" + c.Head.String()
	}
	return c.Branch + "@sha1:" + c.Head.String()
}

// setBranch points the local branch at hash and HEAD at the branch.
func (c *Checkout) setBranch(branch string, hash plumbing.Hash) error {
	name := plumbing.NewBranchReferenceName(branch)
	if err := c.Repo.Storer.SetReference(plumbing.NewHashReference(name, hash)); err != nil {
		return err
	}
	return c.Repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, name))
}

// RemoteHead returns the commit the remote's branch points at, without
// fetching anything. Errors quote no URL credentials.
func RemoteHead(ctx context.Context, rawURL string, auth *Auth, branch string) (plumbing.Hash, error) {
	h, err := remoteHead(ctx, rawURL, auth, branch)
	return h, mask(err)
}

func remoteHead(ctx context.Context, rawURL string, auth *Auth, branch string) (plumbing.Hash, error) {
	if auth == nil {
		auth = &Auth{}
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{rawURL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: auth.Method, CABundle: auth.CABundle,
		ClientCert: auth.ClientCert, ClientKey: auth.ClientKey, ProxyOptions: auth.Proxy})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	name := plumbing.NewBranchReferenceName(branch)
	for _, r := range refs {
		if r.Name() == name {
			return r.Hash(), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("couldn't find remote ref %q", name)
}
