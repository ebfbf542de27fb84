package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/eddyops/eddy/image-automation-controller/internal/update"
)

// DefaultAttempts is how many times a push rejected because the branch
// moved is tried, on the new head each time, before the update fails.
const DefaultAttempts = 5

// CommitSpec is the commit to make: author (also the committer, as Flux)
// and signature; the message comes from the update's result.
type CommitSpec struct {
	AuthorName, AuthorEmail string
	// SignKey signs with OpenPGP (OpenPGPKey), Signer otherwise (SSHSigner);
	// both nil: unsigned.
	SignKey *openpgp.Entity
	Signer  git.Signer
	// Now is the commit time; nil: time.Now.
	Now func() time.Time
}

// PushSpec is where the commit goes: git.push of an ImageUpdateAutomation.
type PushSpec struct {
	// Branch is the branch pushed; "" is the checked-out branch. Another
	// branch is made from the checked-out commit and force-pushed (Flux's
	// GitForcePushBranch, on by default): it holds the checkout plus the
	// automation's one commit.
	Branch string
	// Refspec, when set, is pushed too after the branch (e.g.
	// `refs/heads/auto:refs/heads/main`, or `HEAD:refs/for/main`).
	Refspec string
	// Options are git push options (e.g. GitLab's merge_request.create).
	Options map[string]string
	// Attempts bounds the pushes of the branch; 0 is DefaultAttempts.
	Attempts int
	// KeepSame: another Branch already holding the same change on the
	// same checkout is not pushed again (a pull request's branch).
	KeepSame bool
}

// Outcome is what an Update did.
type Outcome struct {
	// Result is the last update applied (empty: nothing to commit).
	Result update.Result
	// Commit is the pushed commit; zero when nothing changed.
	Commit plumbing.Hash
	// Branch is the branch pushed.
	Branch string
	// Message is the pushed commit's message.
	Message string
	// Attempts counts the pushes of the branch.
	Attempts int
	// Kept: the remote branch already held the change (PushSpec.KeepSame);
	// Commit is its commit, nothing was pushed.
	Kept bool
}

// ErrRejected wraps a push the remote refused because the branch moved,
// after the last attempt.
var ErrRejected = errors.New("push rejected: the branch moved")

// Update applies the update to the checkout (apply), commits it with
// message(result) and pushes it. A push of the checked-out branch refused
// because the branch moved is never forced: the branch is fetched, the
// work tree reset to its new head, the update applied and committed again
// and pushed, up to push.Attempts times, so the other commit is kept. The
// remote only ever gets a whole commit: a failure leaves it as it was.
// Errors quote no URL credentials.
func (c *Checkout) Update(ctx context.Context, apply func(dir string) (update.Result, error),
	message func(update.Result) (string, error), commit CommitSpec, push PushSpec) (Outcome, error) {
	out, err := c.commitAndPush(ctx, apply, message, commit, push)
	return out, mask(err)
}

func (c *Checkout) commitAndPush(ctx context.Context, apply func(dir string) (update.Result, error),
	message func(update.Result) (string, error), commit CommitSpec, push PushSpec) (Outcome, error) {
	branch := push.Branch
	if branch == "" {
		branch = c.Branch
	}
	if branch == "" {
		return Outcome{}, errors.New("no branch to push to: the checkout is not a branch and no push branch is set")
	}
	separate := branch != c.Branch
	if separate {
		if err := c.switchTo(branch, c.Head); err != nil {
			return Outcome{}, err
		}
	}
	attempts := push.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	out := Outcome{Branch: branch}
	for {
		out.Commit, out.Message = plumbing.ZeroHash, ""
		res, err := apply(c.Dir)
		out.Result = res
		if err != nil || res.Empty() {
			return out, err
		}
		if out.Message, err = message(res); err != nil {
			return out, err
		}
		if out.Commit, err = c.commit(commit, out.Message); err != nil {
			return out, fmt.Errorf("commit: %w", err)
		}
		if separate && push.KeepSame {
			if h, ok := c.sameOnRemote(ctx, branch, out.Commit); ok {
				out.Commit, out.Kept = h, true
				return out, nil
			}
		}
		out.Attempts++
		err = c.pushRef(ctx, branch, separate, push.Options)
		if err == nil {
			break
		}
		if separate || !rejected(err) {
			return out, fmt.Errorf("push to branch '%s': %w", branch, err)
		}
		if out.Attempts >= attempts {
			return out, fmt.Errorf("%w: branch '%s' after %d attempts", ErrRejected, branch, out.Attempts)
		}
		if err := c.moveToRemote(ctx, branch); err != nil {
			return out, fmt.Errorf("fetching branch '%s' after a rejected push: %w", branch, err)
		}
	}
	if push.Refspec != "" {
		if err := c.pushSpec(ctx, config.RefSpec(push.Refspec), push.Options); err != nil {
			return out, fmt.Errorf("push refspec '%s': %w", push.Refspec, err)
		}
	}
	return out, nil
}

// switchTo makes branch point at hash and checks it out.
func (c *Checkout) switchTo(branch string, hash plumbing.Hash) error {
	if err := c.setBranch(branch, hash); err != nil {
		return err
	}
	wt, err := c.Repo.Worktree()
	if err != nil {
		return err
	}
	return wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Force: true})
}

// moveToRemote fetches branch and resets the work tree to its new head,
// dropping the local, unpushed commit.
func (c *Checkout) moveToRemote(ctx context.Context, branch string) error {
	remote := plumbing.NewRemoteReferenceName(remoteName, branch)
	spec := config.RefSpec("+" + plumbing.NewBranchReferenceName(branch).String() + ":" + remote.String())
	if err := c.fetch(ctx, []config.RefSpec{spec}); err != nil {
		return err
	}
	ref, err := c.Repo.Reference(remote, true)
	if err != nil {
		return err
	}
	wt, err := c.Repo.Worktree()
	if err != nil {
		return err
	}
	if err := c.setBranch(branch, ref.Hash()); err != nil {
		return err
	}
	if err := wt.Reset(&git.ResetOptions{Commit: ref.Hash(), Mode: git.HardReset}); err != nil {
		return err
	}
	c.Head = ref.Hash()
	return nil
}

// commit stages every change of the work tree and commits it.
func (c *Checkout) commit(spec CommitSpec, msg string) (plumbing.Hash, error) {
	wt, err := c.Repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, err
	}
	now := time.Now
	if spec.Now != nil {
		now = spec.Now
	}
	sig := &object.Signature{Name: spec.AuthorName, Email: spec.AuthorEmail, When: now()}
	return wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, SignKey: spec.SignKey, Signer: spec.Signer})
}

// pushRef pushes the local branch to the remote's branch of that name,
// forced only for a branch of the automation's own (separate).
func (c *Checkout) pushRef(ctx context.Context, branch string, force bool, options map[string]string) error {
	name := plumbing.NewBranchReferenceName(branch).String()
	spec := config.RefSpec(name + ":" + name)
	if force {
		spec = "+" + spec
	}
	return c.pushSpec(ctx, spec, options)
}

func (c *Checkout) pushSpec(ctx context.Context, spec config.RefSpec, options map[string]string) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	err := c.Repo.PushContext(ctx, &git.PushOptions{RemoteName: remoteName, RefSpecs: []config.RefSpec{spec},
		Options: options, Auth: c.auth.Method, CABundle: c.auth.CABundle,
		ClientCert: c.auth.ClientCert, ClientKey: c.auth.ClientKey, ProxyOptions: c.auth.Proxy})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// rejected tells whether a push failed because the remote branch is not
// an ancestor of the pushed commit: go-git finds it before sending, the
// server (a race) reports it per ref: "non-fast-forward", "fetch first",
// or, when the branch moved while the push was received, git-receive-pack's
// "failed to update ref" (its ref lock saw another old value). Retrying
// the latter on a branch that did not move costs one fetch per attempt.
func rejected(err error) bool {
	if errors.Is(err, git.ErrNonFastForwardUpdate) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "rejected", "failed to update ref", "cannot lock ref"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
