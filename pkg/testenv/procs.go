package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Controllers are built controllers that a test package runs as processes
// for all its tests (StartControllers in a Setup), by name, so that a test
// can kill one and start it again, and print their logs when it fails. Safe
// for concurrent use by parallel tests.
type Controllers struct {
	// Dir holds the binaries and the logs; Stop removes it.
	Dir   string
	mu    sync.Mutex
	procs map[string]*Process
	exes  map[string]string
	args  map[string][]string
}

// StartControllers builds the controllers names of this workspace into
// dir and starts each with StartController(e, exe, <dir>/<name>.log,
// args[name]...), in order. On error the ones started are stopped and dir
// is removed.
func StartControllers(e *Environment, dir string, names []string, args map[string][]string) (*Controllers, error) {
	c := &Controllers{Dir: dir, procs: map[string]*Process{}, exes: map[string]string{}, args: args}
	for _, name := range names {
		exe, err := BuildController(name, dir)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.exes[name] = exe
		p, err := StartController(e, exe, filepath.Join(dir, name+".log"), args[name]...)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.procs[name] = p
	}
	return c, nil
}

// Proc is the running process of the controller name (nil if unknown).
func (c *Controllers) Proc(name string) *Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[name]
}

// Restart starts the controller name again with its flags, as a kubelet
// restarts a container, its log in a new file of Dir. It fails t on error.
func (c *Controllers) Restart(t testing.TB, e *Environment, name string) {
	t.Helper()
	log := filepath.Join(c.Dir, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))
	p, err := StartController(e, c.exes[name], log, c.args[name]...)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()
}

// LogsOnFailure prints the last 20 kB of each controller's current log
// when t fails.
func (c *Controllers) LogsOnFailure(t testing.TB) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		c.mu.Lock()
		paths := make([]string, 0, len(c.procs))
		for _, p := range c.procs {
			paths = append(paths, p.LogPath)
		}
		c.mu.Unlock()
		for _, path := range paths {
			b, _ := os.ReadFile(path)
			if len(b) > 20000 {
				b = b[len(b)-20000:]
			}
			t.Logf("%s (last 20 kB):\n%s", filepath.Base(path), b)
		}
	})
}

// Stop stops every controller and removes Dir.
func (c *Controllers) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		p.Stop()
	}
	os.RemoveAll(c.Dir)
}
