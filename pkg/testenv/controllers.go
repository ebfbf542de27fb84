package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
)

// FreePort returns a TCP port on 127.0.0.1 that was free when asked.
func FreePort() (int, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// BuildController builds the workspace's controller ./<name> (e.g.
// "source-controller") into dir and returns the binary's path; the error
// carries the compiler's output.
func BuildController(name, dir string) (string, error) {
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		return "", err
	}
	exe := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", exe, "./"+name)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return exe, nil
}

// Process is a controller binary running against an Environment.
type Process struct {
	// LogPath is the file holding the process's standard output and error.
	LogPath string
	cmd     *exec.Cmd
	log     *os.File
}

// StartController runs the controller binary exe against e with
// --kubeconfig, --health-addr on a free port and --metrics-addr=0 followed
// by args, its output in logPath, and waits up to 30s until /readyz answers
// 200. On failure the process is stopped and the error carries its log.
func StartController(e *Environment, exe, logPath string, args ...string) (*Process, error) {
	health, err := FreePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args = append([]string{"--kubeconfig=" + e.KubeconfigPath,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", health), "--metrics-addr=0"}, args...)
	p := &Process{LogPath: logPath, cmd: exec.Command(exe, args...), log: log}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%s not ready after 30s\n%s", filepath.Base(exe), b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop interrupts the process, waits for it to exit and closes its log.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
	p.log.Close()
}

// RunController builds the controller name of this workspace into a test
// directory and starts it with StartController(e, exe, log, args...) until
// t ends; when t failed, its log is printed. It fails t on any error.
func RunController(t testing.TB, e *Environment, name string, args ...string) *Process {
	t.Helper()
	work := t.TempDir()
	exe, err := BuildController(name, work)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartController(e, exe, filepath.Join(work, name+".log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(p.LogPath)
			t.Logf("%s log:\n%s", name, b)
		}
	})
	return p
}
