package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eddyops/eddy/cli/internal/dev"
)

// processesOf returns the command lines of every process whose command line
// mentions dir (the controllers and cluster components name their state dir).
func processesOf(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), dir) {
			out = append(out, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return out
}

// checkAllGone asserts that nothing of the environment runs or listens.
func checkAllGone(t *testing.T, s *dev.State, dir string) {
	t.Helper()
	pids := []int{s.PID}
	for _, p := range s.Cluster {
		pids = append(pids, p.PID)
	}
	for _, p := range s.Controllers {
		pids = append(pids, p.PID)
	}
	for _, pid := range pids {
		if dev.Alive(pid) {
			t.Errorf("pid %d still runs", pid)
		}
	}
	// A freed port may be bound at once by another package's test running
	// alongside (its ports are picked free too), so what is checked is who
	// listens on it: no process of this environment.
	for _, port := range s.Ports {
		for _, pid := range listeners(t, port) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if slices.Contains(pids, pid) || strings.Contains(string(cmdline), dir) {
				t.Errorf("port %d still listened on by pid %d (%s)", port, pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
	}
	if left := processesOf(dir); len(left) > 0 {
		t.Errorf("processes of %s left: %v", dir, left)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		t.Error("state.json left behind")
	}
}

// listeners returns the pids of the processes with a TCP socket listening
// on port (on any address), from /proc/net/tcp{,6} and /proc/*/fd.
func listeners(t *testing.T, port int) []int {
	t.Helper()
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... inode: "0100007F:854F ... 0A ... 297521"
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return nil
	}
	var pids []int
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && inodes[target] {
			pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) == 0 {
		t.Logf("port %d: a listening socket whose process is not visible here", port)
	}
	return pids
}
