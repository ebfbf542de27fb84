package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/localcluster"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Down is `eddy dev down`: it stops the environment of the default state
// directory (its owner, then any process left), checks its ports are free
// and removes its state.
func Down(ctx context.Context, out io.Writer) error {
	u := ui.New(out)
	dir, err := DefaultStateDir()
	if err != nil {
		return err
	}
	s, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		u.Success("no eddy dev environment is running")
		return nil
	}
	if err != nil {
		return downUnreadable(ctx, u, dir, err)
	}
	pids := []int{}
	for _, p := range s.Cluster {
		pids = append(pids, p.PID)
	}
	for _, p := range s.Controllers {
		pids = append(pids, p.PID)
	}
	if IsOwner(s.PID) {
		stopOwner(ctx, u, s.PID, "waiting for the controllers, the Git server and the cluster to stop")
	}
	// Children die with their owner (parent-death signal); wait for that
	// and kill any left, e.g. after the owner itself was killed outright.
	left := func() []int {
		var l []int
		for _, pid := range pids {
			if Mentions(pid, dir) {
				l = append(l, pid)
			}
		}
		return l
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return len(left()) == 0, nil
	})
	for _, pid := range left() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A node whose owner was killed outright leaves mounts under the state
	// directory: swept before the state is removed.
	if s.Node == NodeReal {
		if err := localcluster.SweepDeadNode(filepath.Join(dir, "cluster")); err != nil {
			return fmt.Errorf("stopping the node: %w", err)
		}
	}
	var busy []string
	for _, port := range s.Ports {
		if !localcluster.PortFree(port) {
			busy = append(busy, strconv.Itoa(port))
		}
	}
	removeState(dir)
	if len(busy) > 0 {
		return fmt.Errorf("stopped, but ports %s are still in use", strings.Join(busy, ", "))
	}
	u.Success("stopped: %d processes ended, %d ports released", len(pids)+1, len(s.Ports))
	return nil
}

// removeState removes what an environment leaves in its state directory
// besides logs/ and the webhook token.
func removeState(dir string) {
	for _, sub := range []string{"cluster", "storage", "registry", "sync.json", "state.json"} {
		_ = os.RemoveAll(filepath.Join(dir, sub))
	}
	_ = RemoveServed(dir)
}

// downUnreadable stops an environment whose state file cannot be read
// (readErr): the process that holds the state directory's lock is its
// owner, which stops the rest; then the state is removed.
func downUnreadable(ctx context.Context, u *ui.UI, dir string, readErr error) error {
	holders, ok := LockHolders(dir)
	if !ok {
		return fmt.Errorf("%v: cannot tell which process owns the environment (no /proc): stop it, then remove %s, %s and %s",
			readErr, filepath.Join(dir, "state.json"), filepath.Join(dir, "cluster"), filepath.Join(dir, "storage"))
	}
	u.Warning("%v: stopping the process that holds %s, and removing the state", readErr, filepath.Join(dir, "lock"))
	stopped := 0
	for _, pid := range holders {
		if pid == os.Getpid() || !IsOwner(pid) {
			continue
		}
		stopOwner(ctx, u, pid, "")
		stopped++
	}
	// An owner that has left IsOwner (its memory released at exit) may
	// still hold its files for a moment: wait for the lock to come free.
	var lock *os.File
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		l, err := Lock(dir)
		lock = l
		return err == nil, nil
	})
	if err != nil {
		left, _ := LockHolders(dir)
		return fmt.Errorf("processes %v still hold %s: stop them, then run `eddy dev down` again", left, filepath.Join(dir, "lock"))
	}
	defer lock.Close()
	removeState(dir)
	u.Success("stopped: %d process(es) ended; the unreadable state file is removed", stopped)
	return nil
}

// stopOwner sends SIGTERM to the environment's owner pid and waits up to
// 60s for it to end (showing spin, when not "", meanwhile), then SIGKILLs it.
func stopOwner(ctx context.Context, u *ui.UI, pid int, spin string) {
	u.Action("stopping the environment (pid %d)", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	stop := func() {}
	if spin != "" {
		stop = u.Spin(spin)
	}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return !stopping(pid), nil
	})
	stop()
	if stopping(pid) {
		u.Warning("pid %d did not stop within 60s: killing it", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// stopping reports whether pid, an owner that was signalled, still runs:
// an owner, or a process whose command line is already empty because it
// is exiting (its memory is gone before it becomes a zombie; IsOwner says
// false then, though the process is still there).
func stopping(pid int) bool {
	if IsOwner(pid) {
		return true
	}
	cl, ok := cmdline(pid)
	return ok && cl == "" && Alive(pid)
}
