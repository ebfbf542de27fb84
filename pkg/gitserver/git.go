package gitserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitEnv makes commits reproducible and independent of the user's Git
// configuration: a fixed identity and date, no global or system config,
// no background gc.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Eddy", "GIT_AUTHOR_EMAIL=eddy@example.com",
	"GIT_COMMITTER_NAME=Eddy", "GIT_COMMITTER_EMAIL=eddy@example.com",
	"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
	// No automatic gc or maintenance: a detached `git gc --auto` after a
	// large commit would still be writing when a test removes the repo.
	"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
	"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false",
}

// Git runs `git args...` in dir with a fixed identity and commit date and
// returns its trimmed standard output; the error carries standard error.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// InitBare creates an empty bare repository at <root>/<name> and returns its path.
func InitBare(root, name string) (string, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	_, err := Git(dir, "init", "-q", "--bare", "--initial-branch=main")
	return dir, err
}

// Repo is a bare repository below a server's root and a work tree whose
// commits are pushed to it; tests and demos use it to change what a
// GitRepository sees.
type Repo struct {
	// Name is the path below the root, e.g. "app-1.git"; the repository's
	// URL is Server.URL + "/" + Name.
	Name string
	// Work is the work tree, Bare the served repository.
	Work, Bare string
}

// NewRepo creates the bare repository root/name and a work tree in work
// (an empty, existing directory) on branch main.
func NewRepo(root, name, work string) (*Repo, error) {
	bare, err := InitBare(root, name)
	if err != nil {
		return nil, err
	}
	r := &Repo{Name: name, Work: work, Bare: bare}
	_, err = r.Git("init", "-q", "--initial-branch=main")
	return r, err
}

// Git runs git in the work tree.
func (r *Repo) Git(args ...string) (string, error) { return Git(r.Work, args...) }

// Commit writes files (name → content; "" deletes the file), commits them
// with msg, force-pushes the work tree's HEAD to main and returns the
// commit hash.
func (r *Repo) Commit(files map[string]string, msg string) (string, error) {
	for name, content := range files {
		p := filepath.Join(r.Work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", msg}, {"push", "-q", "--force", r.Bare, "HEAD:main"}} {
		if _, err := r.Git(args...); err != nil {
			return "", err
		}
	}
	return r.Git("rev-parse", "HEAD")
}
