package dev

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Restart back-off of a controller process that exited: doubles from
// backoffMin to backoffMax, and starts over once a process ran backoffReset.
const (
	backoffMin   = time.Second
	backoffMax   = 30 * time.Second
	backoffReset = time.Minute
)

// ProcSpec describes one controller process.
type ProcSpec struct {
	// Name, e.g. "source-controller".
	Name string
	// Bin is the absolute path of the binary; Args its flags.
	Bin  string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// LogPath receives the process's standard output and error (appended).
	LogPath string
	// HealthURL answers 200 when the process is ready (its /readyz).
	HealthURL string
}

// proc is a supervised process: it is restarted with back-off when it exits,
// like a kubelet restarts a container.
type proc struct {
	spec ProcSpec

	mu       sync.Mutex
	cmd      *exec.Cmd
	pid      int
	restarts int
	lastExit string
	started  time.Time
	held     bool          // not restarted while held (see Supervisor.Hold)
	release  chan struct{} // closed by Release
	exited   chan struct{} // closed when the current process has been reaped
}

// Supervisor runs controller processes and restarts them when they exit.
type Supervisor struct {
	mu       sync.Mutex
	procs    []*proc
	stopping bool
	wg       sync.WaitGroup
	// OnChange is called (from any goroutine) after a process started or
	// exited; the dev environment rewrites its state file there.
	OnChange func()
}

// ProcStatus is a snapshot of one supervised process.
type ProcStatus struct {
	Name      string    `json:"name"`
	PID       int       `json:"pid"`
	Restarts  int       `json:"restarts"`
	LastExit  string    `json:"lastExit,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	HealthURL string    `json:"healthURL,omitempty"`
	LogPath   string    `json:"log"`
}

// Start starts the process of spec and keeps it running until Stop.
func (s *Supervisor) Start(spec ProcSpec) error {
	p := &proc{spec: spec}
	if err := p.start(); err != nil {
		return err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.keep(p)
	s.changed()
	return nil
}

func (s *Supervisor) changed() {
	if s.OnChange != nil {
		s.OnChange()
	}
}

func (p *proc) start() error {
	logFile, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.spec.Bin, p.spec.Args...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group (signals reach it alone); dies with its supervisor.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.spec.Name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.pid, p.started, p.exited = cmd, cmd.Process.Pid, time.Now(), exited
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		if err != nil {
			p.lastExit = err.Error()
		} else {
			p.lastExit = "exit status 0"
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// keep restarts p each time it exits, until the supervisor stops.
func (s *Supervisor) keep(p *proc) {
	defer s.wg.Done()
	backoff := backoffMin
	for {
		p.mu.Lock()
		exited, started := p.exited, p.started
		p.mu.Unlock()
		<-exited
		s.changed()
		if s.isStopping() {
			return
		}
		if time.Since(started) > backoffReset {
			backoff = backoffMin
		}
		p.mu.Lock()
		release := p.release
		p.mu.Unlock()
		if release != nil {
			<-release
		} else {
			time.Sleep(backoff)
			backoff = min(backoff*2, backoffMax)
		}
		if s.isStopping() {
			return
		}
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		for p.start() != nil {
			if s.isStopping() {
				return
			}
			time.Sleep(backoff)
		}
		if s.isStopping() { // Stop may have missed the new process
			p.mu.Lock()
			pid, exited := p.pid, p.exited
			p.mu.Unlock()
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
			return
		}
		s.changed()
	}
}

func (s *Supervisor) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func (s *Supervisor) find(name string) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.spec.Name == name {
			return p
		}
	}
	return nil
}

// Kill sends SIGKILL to the named process, as a crash would; the supervisor
// restarts it after its back-off unless it is held.
func (s *Supervisor) Kill(name string) error {
	p := s.find(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	p.mu.Lock()
	pid, exited := p.pid, p.exited
	p.mu.Unlock()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-exited
	return nil
}

// Hold keeps the named process from being restarted until Release.
func (s *Supervisor) Hold(name string) {
	if p := s.find(name); p != nil {
		p.mu.Lock()
		p.release = make(chan struct{})
		p.mu.Unlock()
	}
}

// Release lets a held process restart at once.
func (s *Supervisor) Release(name string) {
	if p := s.find(name); p != nil {
		p.mu.Lock()
		if p.release != nil {
			close(p.release)
			p.release = nil
		}
		p.mu.Unlock()
	}
}

// Status returns a snapshot of every process.
func (s *Supervisor) Status() []ProcStatus {
	s.mu.Lock()
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	out := make([]ProcStatus, 0, len(procs))
	for _, p := range procs {
		p.mu.Lock()
		out = append(out, ProcStatus{Name: p.spec.Name, PID: p.pid, Restarts: p.restarts, LastExit: p.lastExit,
			StartedAt: p.started, HealthURL: p.spec.HealthURL, LogPath: p.spec.LogPath})
		p.mu.Unlock()
	}
	return out
}

// Stop sends SIGTERM to every process (SIGKILL after grace) and waits until
// all have exited; nothing is restarted afterwards.
func (s *Supervisor) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		s.Release(p.spec.Name)
	}
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.mu.Lock()
			pid, exited := p.pid, p.exited
			p.mu.Unlock()
			select {
			case <-exited:
				return
			default:
			}
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(grace):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-exited
			}
		}()
	}
	wg.Wait()
	s.wg.Wait()
}

// Healthy reports whether url answers 200 within a second.
func Healthy(url string) bool {
	if url == "" {
		return false
	}
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
