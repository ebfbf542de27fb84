package process

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Default restart back-off of a Supervisor: it doubles from
// DefaultBackoffMin to DefaultBackoffMax and starts over once a process ran
// DefaultBackoffReset (a kubelet's CrashLoopBackOff has the same shape).
const (
	DefaultBackoffMin   = time.Second
	DefaultBackoffMax   = 30 * time.Second
	DefaultBackoffReset = time.Minute
)

// Supervisor runs processes and restarts each one that exits, after a
// back-off, until Stop. The zero value is ready to use.
type Supervisor struct {
	// OnChange is called (from any goroutine) after a process started or
	// exited, e.g. to record Status in a file.
	OnChange func()
	// BackoffMin, BackoffMax and BackoffReset override the defaults above
	// when set (before the first Start).
	BackoffMin, BackoffMax, BackoffReset time.Duration

	once     sync.Once
	ctx      context.Context // cancelled by Stop: ends every back-off and hold at once
	cancel   context.CancelFunc
	mu       sync.Mutex
	procs    []*supervised
	stopping bool
	wg       sync.WaitGroup
}

// supervised is one process of a Supervisor and its restart history.
type supervised struct {
	spec Spec

	mu       sync.Mutex
	cur      *Process
	restarts int
	lastExit string
	release  chan struct{} // non-nil while held; closed by Release
	waiting  bool          // exited, and the restart waits for Release
}

// Status is a snapshot of one supervised process, as `eddy dev` records it
// in its state file (hence the JSON names).
type Status struct {
	Name      string    `json:"name"`
	PID       int       `json:"pid"`
	Restarts  int       `json:"restarts"`
	LastExit  string    `json:"lastExit,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	HealthURL string    `json:"healthURL,omitempty"`
	LogPath   string    `json:"log"`
	// Held is true while the process is down and its restart waits for
	// Release (see Hold).
	Held bool `json:"-"`
}

func (s *Supervisor) init() {
	s.once.Do(func() { s.ctx, s.cancel = context.WithCancel(context.Background()) })
}

// Start starts the process of spec and keeps it running until Stop. The
// error is that of the first start; later ones are retried with back-off.
func (s *Supervisor) Start(spec Spec) error {
	s.init()
	cur, err := Start(spec)
	if err != nil {
		return err
	}
	p := &supervised{spec: spec, cur: cur}
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

func (s *Supervisor) backoff() (lo, hi, reset time.Duration) {
	lo, hi, reset = DefaultBackoffMin, DefaultBackoffMax, DefaultBackoffReset
	if s.BackoffMin > 0 {
		lo = s.BackoffMin
	}
	if s.BackoffMax > 0 {
		hi = s.BackoffMax
	}
	if s.BackoffReset > 0 {
		reset = s.BackoffReset
	}
	return lo, max(lo, hi), reset
}

// sleep waits d, or less when Stop is called: then it returns false.
func (s *Supervisor) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// keep restarts p each time it exits, until the supervisor stops.
func (s *Supervisor) keep(p *supervised) {
	defer s.wg.Done()
	lo, hi, reset := s.backoff()
	backoff := lo
	for {
		p.mu.Lock()
		cur := p.cur
		p.mu.Unlock()
		<-cur.Done()
		p.mu.Lock()
		p.lastExit = cur.exitString()
		release := p.release
		p.waiting = release != nil
		p.mu.Unlock()
		s.changed()
		if time.Since(cur.started) > reset {
			backoff = lo
		}
		if release != nil {
			select {
			case <-release:
			case <-s.ctx.Done():
			}
			p.mu.Lock()
			p.waiting = false
			p.mu.Unlock()
		} else if s.sleep(backoff) {
			backoff = min(backoff*2, hi)
		}
		for {
			if s.ctx.Err() != nil {
				return
			}
			next, err := Start(p.spec)
			if err == nil {
				p.mu.Lock()
				p.cur = next
				p.restarts++
				p.mu.Unlock()
				break
			}
			s.sleep(backoff)
		}
		if s.ctx.Err() != nil { // Stop may have missed the new process
			p.mu.Lock()
			cur := p.cur
			p.mu.Unlock()
			cur.Kill()
			return
		}
		s.changed()
	}
}

func (s *Supervisor) find(name string) *supervised {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.spec.Name == name {
			return p
		}
	}
	return nil
}

// Kill sends SIGKILL to the named process, as a crash would, and waits
// until it was reaped; the supervisor restarts it after its back-off unless
// it is held.
func (s *Supervisor) Kill(name string) error {
	p := s.find(name)
	if p == nil {
		return fmt.Errorf("no process %s", name)
	}
	p.mu.Lock()
	cur := p.cur
	p.mu.Unlock()
	cur.Kill()
	return nil
}

// Hold keeps the named process from being restarted until Release.
func (s *Supervisor) Hold(name string) {
	if p := s.find(name); p != nil {
		p.mu.Lock()
		if p.release == nil {
			p.release = make(chan struct{})
		}
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

// Status returns a snapshot of every process, in start order.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	procs := append([]*supervised(nil), s.procs...)
	s.mu.Unlock()
	out := make([]Status, 0, len(procs))
	for _, p := range procs {
		p.mu.Lock()
		out = append(out, Status{Name: p.spec.Name, PID: p.cur.PID(), Restarts: p.restarts, LastExit: p.lastExit,
			StartedAt: p.cur.started, HealthURL: p.spec.HealthURL, LogPath: p.spec.LogPath, Held: p.waiting})
		p.mu.Unlock()
	}
	return out
}

// Stop ends every back-off and hold, sends SIGTERM to every process
// (SIGKILL after grace) and returns once all have exited; nothing is
// restarted afterwards. A process waiting for its restart costs no wait.
func (s *Supervisor) Stop(grace time.Duration) {
	s.init()
	s.cancel()
	s.mu.Lock()
	procs := append([]*supervised(nil), s.procs...)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() {
			p.mu.Lock()
			cur := p.cur
			p.mu.Unlock()
			cur.Stop(grace)
		})
	}
	wg.Wait()
	s.wg.Wait()
}
