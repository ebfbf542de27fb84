package dev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --repo directory that is not a Git repository and holds the state
// directory (e.g. $HOME) is refused in one line, not copied into itself
// until a path is too long.
func TestSnapshotRefusesADirectoryHoldingTheStateDirectory(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(home, ".local", "state", "eddy", "dev", "git", "home-1234")
	err := snapshot(home, dst)
	if err == nil || !strings.Contains(err.Error(), "holds eddy dev's state directory") || len(err.Error()) > 300 {
		t.Fatalf("snapshot of a directory holding its destination: %v", err)
	}
	// A sibling whose name starts with the source's is not inside it.
	if inside(home, home+"x") {
		t.Errorf("%sx is not inside %s", home, home)
	}
}
