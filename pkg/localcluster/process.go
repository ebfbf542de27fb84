package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child component. It runs in its own process group, so that
// Stop can signal it and anything it spawned, and with a parent-death signal,
// so that it dies with the test binary even when that is killed outright.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited and been reaped
	err     error         // exit status; read after done is closed
}

func startProcess(name, bin, logDir string, args ...string) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = logDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace. Once
// the process was reaped its pid may belong to someone else, so nothing is
// signalled after that.
func (p *process) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
		return
	}
	killGroup(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		killGroup(p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

func killGroup(pgid int, sig syscall.Signal) {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pgid, sig)
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// registry holds the clusters of this process that are running, so that a
// SIGINT or SIGTERM stops them before the process exits.
var registry = struct {
	sync.Mutex
	clusters map[*Cluster]struct{}
	once     sync.Once
}{clusters: map[*Cluster]struct{}{}}

func formatLogs(procs []*process, lines int) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "----- %s (last %d lines of %s) -----\n%s\n", p.name, lines, filepath.Base(p.logPath), p.tail(lines))
	}
	return b.String()
}
