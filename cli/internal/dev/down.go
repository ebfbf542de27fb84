package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eddyops/eddy/cli/internal/ui"
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
		return downUnreadable(u, dir, err)
	}
	pids := []int{}
	for _, p := range s.Cluster {
		pids = append(pids, p.PID)
	}
	for _, p := range s.Controllers {
		pids = append(pids, p.PID)
	}
	if IsOwner(s.PID) {
		u.Action("stopping the environment (pid %d)", s.PID)
		_ = syscall.Kill(s.PID, syscall.SIGTERM)
		stop := u.Spin("waiting for the controllers, the Git server and the cluster to stop")
		deadline := time.Now().Add(60 * time.Second)
		for IsOwner(s.PID) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		if IsOwner(s.PID) {
			u.Warning("pid %d did not stop within 60s: killing it", s.PID)
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
		}
	}
	// Children die with their owner (parent-death signal); wait for that
	// and kill any left, e.g. after the owner itself was killed outright.
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for Mentions(pid, dir) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if Mentions(pid, dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	var busy []string
	for _, port := range s.Ports {
		if !PortFree(port) {
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
	for _, sub := range []string{"cluster", "storage", "sync.json", "state.json"} {
		_ = os.RemoveAll(filepath.Join(dir, sub))
	}
	_ = RemoveServed(dir)
}

// downUnreadable stops an environment whose state file cannot be read
// (readErr): the process that holds the state directory's lock is its
// owner, which stops the rest; then the state is removed.
func downUnreadable(u *ui.UI, dir string, readErr error) error {
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
		u.Action("stopping the environment (pid %d)", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(60 * time.Second)
		for IsOwner(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if IsOwner(pid) {
			u.Warning("pid %d did not stop within 60s: killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		stopped++
	}
	lock, err := Lock(dir)
	if err != nil {
		left, _ := LockHolders(dir)
		return fmt.Errorf("processes %v still hold %s: stop them, then run `eddy dev down` again", left, filepath.Join(dir, "lock"))
	}
	defer lock.Close()
	removeState(dir)
	u.Success("stopped: %d process(es) ended; the unreadable state file is removed", stopped)
	return nil
}

func PortFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
