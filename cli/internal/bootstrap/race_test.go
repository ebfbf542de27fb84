package bootstrap

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// movesBranch is a one-shot pre-receive hook that moves main while a push
// is being received, as a concurrent push does: the server then answers
// "failed to update ref", not "non-fast-forward".
const movesBranch = `#!/bin/sh
unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
rm -f "$0"
export GIT_AUTHOR_NAME=o GIT_AUTHOR_EMAIL=o@o GIT_COMMITTER_NAME=o GIT_COMMITTER_EMAIL=o@o
c=$(git commit-tree -p refs/heads/main -m concurrent 'refs/heads/main^{tree}')
git update-ref refs/heads/main "$c"
cat >/dev/null
`

// A push that loses a race on the server's ref update is ErrConflict (so
// bootstrap clones again), while a ref that fails to update for another
// reason (a stale lock) is not.
func TestPushLostRaceIsConflict(t *testing.T) {
	srv, bare := pushableRepo(t, gitserver.Options{})
	ctx := context.Background()
	remote := Remote{URL: srv.URL + "/fleet.git", Branch: "main"}
	author := object.Signature{Name: "Eddy"}
	commitPush := func(file string) *Checkout {
		co, err := Clone(ctx, t.TempDir(), remote)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := co.Commit(map[string]string{file: "x: 1\n"}, file, author); err != nil {
			t.Fatal(err)
		}
		return co
	}
	if err := commitPush("a.yaml").Push(ctx); err != nil {
		t.Fatal(err)
	}

	co := commitPush("b.yaml")
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(movesBranch), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := co.Push(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("push that lost the race = %v, want ErrConflict", err)
	}

	co = commitPush("c.yaml")
	lock := filepath.Join(bare, "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(lock)
	if err := co.Push(ctx); err == nil || errors.Is(err, ErrConflict) {
		t.Errorf("push against a stale lock = %v, want an error that is not ErrConflict", err)
	}
}
