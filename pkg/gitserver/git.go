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
// configuration: a fixed identity and date, no global or system config.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Eddy", "GIT_AUTHOR_EMAIL=eddy@example.com",
	"GIT_COMMITTER_NAME=Eddy", "GIT_COMMITTER_EMAIL=eddy@example.com",
	"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
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
