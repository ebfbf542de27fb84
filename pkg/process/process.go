// Package process starts and supervises child processes the way Eddy's local
// environments need them: each in its own process group (so a signal reaches
// it and anything it spawned), with a parent-death signal (so it dies with
// its parent even when that is killed outright), and its output appended to
// a log file. Process is one run of a binary; Supervisor restarts a process
// that exits, with back-off, as a kubelet restarts a container.
package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Spec describes a child process.
type Spec struct {
	// Name names the process in errors and Status, e.g. "kube-apiserver".
	Name string
	// Bin is the path of the binary; Args its arguments.
	Bin  string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Dir is the working directory; "" is this process's.
	Dir string
	// LogPath receives the process's standard output and error (appended,
	// created with mode 0600).
	LogPath string
	// HealthURL, if set, answers 200 when the process is ready. It is only
	// carried into Supervisor.Status: nothing here probes it.
	HealthURL string
}

// Process is one running (or exited) child process.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has exited and been reaped
	err     error         // exit status; read after done is closed
}

// Start starts spec's binary. The error names the process.
func Start(spec Spec) (*Process, error) {
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Bin, spec.Args...)
	if len(spec.Env) > 0 {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	p := &Process{spec: spec, cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Name is Spec.Name.
func (p *Process) Name() string { return p.spec.Name }

// Spec is the Spec the process was started with: Start(p.Spec()) runs the
// same binary again, with the same arguments, environment and log.
func (p *Process) Spec() Spec { return p.spec }

// LogPath is Spec.LogPath.
func (p *Process) LogPath() string { return p.spec.LogPath }

// PID is the process ID (also its process group ID).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended, and its exit error (nil
// for exit status 0).
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// exitString says how an exited process ended, e.g. "signal: killed".
func (p *Process) exitString() string {
	if p.err != nil {
		return p.err.Error()
	}
	return "exit status 0"
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits until the process was reaped. Once reaped its pid may belong to
// someone else, so nothing is signalled after that.
func (p *Process) Stop(grace time.Duration) {
	if done, _ := p.Exited(); done {
		return
	}
	killGroup(p.PID(), syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
}

// Kill sends SIGKILL to the process group, as a crash would, and waits
// until the process was reaped.
func (p *Process) Kill() {
	if done, _ := p.Exited(); !done {
		killGroup(p.PID(), syscall.SIGKILL)
	}
	<-p.done
}

// killGroup signals process group pgid, or the process alone when the
// group is gone (it may have left it).
func killGroup(pgid int, sig syscall.Signal) {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pgid, sig)
	}
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string { return TailFile(p.spec.LogPath, n) }

// TailFile returns the last n lines of the file at path, or "(no log: …)"
// when it cannot be read.
func TailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
