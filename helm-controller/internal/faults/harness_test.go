package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/process"
	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/util/wait"
)

// controller is one built controller binary the suite starts, kills and
// starts again with the same flags (a new process each time, its log
// appended to one file), as a kubelet restarts a container.
type controller struct {
	name    string
	exe     string
	args    []string
	logPath string
	health  int // port of /readyz
	metrics int // port of /metrics and /debug/pprof

	// label names this instance in figures (a replica's "kustomize-controller-1").
	label string
	// baseEnv is added to the environment of every start (TMPDIR, ...).
	baseEnv []string

	mu      sync.Mutex
	proc    *process.Process
	starts  int
	faulted bool      // started with a fault point armed
	down    bool      // stopped on purpose: not to be restarted by the suite's kubelet
	started time.Time // of the current process
}

// newController builds (or finds in EDDY_BUILT_BIN_DIR) the controller
// name into dir; args follow --kubeconfig, --health-addr and --metrics-addr.
func newController(e *testenv.Environment, dir, name string, args ...string) (*controller, error) {
	exe, err := testenv.BuildController(name, dir)
	if err != nil {
		return nil, err
	}
	c := &controller{name: name, label: name, exe: exe, logPath: filepath.Join(dir, name+".log")}
	if c.health, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	if c.metrics, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	c.args = append([]string{"--kubeconfig=" + e.KubeconfigPath, fmt.Sprintf("--health-addr=127.0.0.1:%d", c.health),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", c.metrics)}, args...)
	return c, nil
}

// start runs the controller with env added to its environment (e.g.
// EDDY_FAULT=...) and, when waitReady, waits up to 30s for /readyz.
func (c *controller) start(waitReady bool, env ...string) error {
	c.mu.Lock()
	p, err := process.Start(process.Spec{Name: c.name, Bin: c.exe, Args: c.args,
		Env: append(append([]string(nil), c.baseEnv...), env...), LogPath: c.logPath})
	if err == nil {
		c.proc = p
		c.starts++
		c.faulted = len(env) > 0
		c.down = false
		c.started = time.Now()
	}
	c.mu.Unlock()
	if err != nil || !waitReady {
		return err
	}
	return c.waitReady()
}

func (c *controller) waitReady() error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", c.health)
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if done, perr := c.current().Exited(); done {
			return false, fmt.Errorf("exited: %v", perr)
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w\n%s", c.name, err, process.TailFile(c.logPath, 40))
	}
	return nil
}

func (c *controller) current() *process.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// exited tells whether the current process has ended, and its exit code
// (-1 for a signal).
func (c *controller) exited() (bool, int) {
	p := c.current()
	if p == nil {
		return false, 0
	}
	done, err := p.Exited()
	if !done {
		return false, 0
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return true, exit.ExitCode()
	}
	return true, 0
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would.
func (c *controller) kill() {
	c.setDown()
	if p := c.current(); p != nil {
		p.Kill()
	}
}

func (c *controller) setDown() {
	c.mu.Lock()
	c.down = true
	c.mu.Unlock()
}

// isDown tells whether the controller was stopped on purpose.
func (c *controller) isDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

// stop ends the process gracefully (SIGTERM, SIGKILL after 10s).
func (c *controller) stop() {
	c.setDown()
	if p := c.current(); p != nil {
		p.Stop(10 * time.Second)
	}
}

// waitExit waits up to d for the process to exit and returns its exit
// code (-1 when killed by a signal or still running).
func (c *controller) waitExit(d time.Duration) (int, error) {
	p := c.current()
	select {
	case <-p.Done():
	case <-time.After(d):
		return -1, fmt.Errorf("%s still running after %s\n%s", c.name, d, process.TailFile(c.logPath, 40))
	}
	_, err := p.Exited()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	}
	return -1, err
}

// goroutines reads the goroutine count of the running process from
// /debug/pprof/goroutine?debug=1 ("goroutine profile: total N").
func (c *controller) goroutines() (int, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", c.metrics))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 256)
	n, _ := resp.Body.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	var total int
	if _, err := fmt.Sscanf(line, "goroutine profile: total %d", &total); err != nil {
		return 0, fmt.Errorf("reading %q: %w", line, err)
	}
	return total, nil
}

// logOnFailure prints the tail of the controller's log when t failed.
func (c *controller) logOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", c.name, process.TailFile(c.logPath, 80))
		}
	})
}
