package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// nodeLockPath is the machine-wide lock of AcquireNodeLock.
const nodeLockPath = "/run/eddy-localcluster-node.lock"

// AcquireNodeLock takes the machine-wide lock of the node profile, waiting
// (polling every 200ms) until no other process holds it or ctx ends, and
// returns its release. One node-profile cluster runs per machine, and what
// it changes (sysctls, devices, nftables tables, cgroups) is machine-wide:
// callers in different processes that each start one and compare the
// machine's state before and after (the tests of several packages, run in
// parallel by go test) hold it for as long as they run. Start does not take
// it: it refuses a second live cluster outright. The lock is an flock, so
// it is released when its holder dies. Errors are the file system's or
// ctx's.
func AcquireNodeLock(ctx context.Context) (release func(), err error) {
	f, err := os.OpenFile(nodeLockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", nodeLockPath, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
