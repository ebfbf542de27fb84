package testenv

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eddyops/eddy/pkg/gitserver"
)

// GitServer is a Git HTTP server (pkg/gitserver) over a temporary root, one
// per test package; tests create their repositories on it with NewRepo.
type GitServer struct {
	*gitserver.Server
	// Root holds the served bare repositories.
	Root  string
	count atomic.Int64 // makes repository names unique
}

// StartGitServer serves a new temporary root; Close stops the server and
// removes the root.
func StartGitServer() (*GitServer, error) {
	root, err := os.MkdirTemp("", "eddy-git-")
	if err != nil {
		return nil, err
	}
	srv, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &GitServer{Server: srv, Root: root}, nil
}

// Close stops the server and removes its root.
func (g *GitServer) Close() {
	g.Server.Close()
	os.RemoveAll(g.Root)
}

// WithGitServer is a Setup that starts a GitServer into *g for the tests
// and closes it after them.
func WithGitServer(g **GitServer) Setup {
	return func(*Environment) (func(), error) {
		srv, err := StartGitServer()
		if err != nil {
			return nil, err
		}
		*g = srv
		return srv.Close, nil
	}
}

// Repo is a bare repository served by a GitServer and its work tree (in the
// test's temporary directory); the methods with a testing.TB fail the test
// on error.
type Repo struct {
	*gitserver.Repo
	srv *GitServer
}

// NewRepo creates a repository named after the test (<test>-<n>.git) with
// a work tree on branch main; with files not nil, it commits and pushes
// them as "initial commit".
func (g *GitServer) NewRepo(t testing.TB, files map[string]string) *Repo {
	t.Helper()
	name := fmt.Sprintf("%s-%d.git", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), g.count.Add(1))
	gr, err := gitserver.NewRepo(g.Root, name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &Repo{Repo: gr, srv: g}
	if files != nil {
		r.MustCommit(t, files, "initial commit")
	}
	return r
}

// URL is the repository's HTTP address.
func (r *Repo) URL() string { return r.srv.URL + "/" + r.Name }

// MustGit runs git args in the work tree and returns its trimmed output.
func (r *Repo) MustGit(t testing.TB, args ...string) string {
	t.Helper()
	out, err := r.Git(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// MustCommit writes files ("" deletes a file), commits with msg, pushes to
// main and returns the commit hash.
func (r *Repo) MustCommit(t testing.TB, files map[string]string, msg string) string {
	t.Helper()
	hash, err := r.Commit(files, msg)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}
