package controller

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// Past maxAbandonedSSH abandoned operations still running, bounded refuses
// at once; operations a reconcile still waits for are not counted, however
// many run.
func TestAbandonedSSHOperationsAreCapped(t *testing.T) {
	u := &url.URL{Scheme: "ssh", Host: "git.example.com"}
	release := make(chan struct{})
	var waited, started sync.WaitGroup
	for range maxAbandonedSSH + 1 {
		waited.Add(1)
		started.Add(1)
		go func() {
			defer waited.Done()
			if err := bounded(context.Background(), u, "", func() error { started.Done(); <-release; return nil }); err != nil {
				t.Errorf("bounded of an operation waited for = %v", err)
			}
		}()
	}
	started.Wait() // all run before any is abandoned
	for range maxAbandonedSSH {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := bounded(ctx, u, "", func() error { <-release; return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("bounded = %v, want the context's error", err)
		}
	}
	if err := bounded(context.Background(), u, "", func() error { return nil }); !errors.Is(err, errTooManyAbandonedSSH) {
		t.Errorf("bounded past the cap = %v, want %v", err, errTooManyAbandonedSSH)
	}
	close(release)
	waited.Wait()
	waitNoSSHOperations(t)
}

// waitNoSSHOperations waits until no abandoned SSH operation runs.
func waitNoSSHOperations(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return abandonedSSH.Load() == 0, nil })
	if err != nil {
		t.Fatalf("%d abandoned SSH operations still run", abandonedSSH.Load())
	}
}
