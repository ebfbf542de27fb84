package localcluster_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
)

// The node lock is exclusive: a second holder waits until the first
// releases it, or gives up with its context.
func TestNodeLockIsExclusiveUntilReleased(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node lock lives in /run: needs root")
	}
	release, err := localcluster.AcquireNodeLock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := localcluster.AcquireNodeLock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second AcquireNodeLock while held: %v, want it to wait until its context ends", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := localcluster.AcquireNodeLock(context.Background())
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("AcquireNodeLock after the release: %v", err)
	}
}
