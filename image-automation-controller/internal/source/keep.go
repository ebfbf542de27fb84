package source

import (
	"context"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// sameOnRemote tells whether the remote branch already holds what commit
// holds: a commit with the same tree whose parent is the checkout's head.
// Then pushing commit would only change the commit time: a pull request
// branch left as it is keeps its reviews. It returns the remote commit.
func (c *Checkout) sameOnRemote(ctx context.Context, branch string, commit plumbing.Hash) (plumbing.Hash, bool) {
	rem, err := c.Repo.Remote(remoteName)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: c.auth.Method, CABundle: c.auth.CABundle,
		ClientCert: c.auth.ClientCert, ClientKey: c.auth.ClientKey, ProxyOptions: c.auth.Proxy})
	if err != nil {
		return plumbing.ZeroHash, false
	}
	name := plumbing.NewBranchReferenceName(branch)
	var remote plumbing.Hash
	for _, r := range refs {
		if r.Name() == name {
			remote = r.Hash()
		}
	}
	if remote.IsZero() {
		return plumbing.ZeroHash, false
	}
	tracking := plumbing.NewRemoteReferenceName(remoteName, branch)
	if err := c.fetch(ctx, []config.RefSpec{config.RefSpec("+" + name.String() + ":" + tracking.String())}); err != nil {
		return plumbing.ZeroHash, false
	}
	theirs, err1 := c.Repo.CommitObject(remote)
	ours, err2 := c.Repo.CommitObject(commit)
	if err1 != nil || err2 != nil || theirs.TreeHash != ours.TreeHash {
		return plumbing.ZeroHash, false
	}
	if len(theirs.ParentHashes) != 1 || theirs.ParentHashes[0] != c.Head {
		return plumbing.ZeroHash, false
	}
	return remote, true
}
