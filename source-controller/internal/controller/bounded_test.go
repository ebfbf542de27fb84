package controller

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An SSH operation abandoned when its reconcile times out writes into its
// working directory later (a handshake that answered late); that
// directory is removed once the operation ends, by its goroutine, and not
// written into after the reconcile removed it.
func TestAbandonedSSHOperationOwnsItsDirectory(t *testing.T) {
	dir, err := os.MkdirTemp("", "gitrepository-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u := &url.URL{Scheme: "ssh", Host: "git.example.com"}
	ctx, cancel := context.WithCancel(context.Background())
	release, ended := make(chan struct{}), make(chan struct{})
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- bounded(ctx, u, dir, func() error {
			close(started)
			<-release
			defer close(ended)
			if err := os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		})
	}()
	<-started
	cancel() // the reconcile's timeout
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("bounded = %v, want the context's error", err)
	}
	removeWorkDir(dir) // what the reconcile defers
	close(release)
	<-ended
	waitNoSSHOperations(t) // its goroutine removes the directory, then ends
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s exists after the abandoned operation ended (%v)", dir, err)
	}
}

// Past maxSSHOperations operations still running, bounded refuses at
// once rather than starting another goroutine.
func TestAbandonedSSHOperationsAreCapped(t *testing.T) {
	u := &url.URL{Scheme: "ssh", Host: "git.example.com"}
	release := make(chan struct{})
	for range maxSSHOperations {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := bounded(ctx, u, "", func() error { <-release; return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("bounded = %v, want the context's error", err)
		}
	}
	if err := bounded(context.Background(), u, "", func() error { return nil }); !errors.Is(err, errTooManySSHOperations) {
		t.Errorf("bounded past the cap = %v, want %v", err, errTooManySSHOperations)
	}
	close(release)
	waitNoSSHOperations(t)
}

// waitNoSSHOperations waits until no SSH operation runs, abandoned or not.
func waitNoSSHOperations(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(sshSlots) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d SSH operations still run", len(sshSlots))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
