package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	"k8s.io/apimachinery/pkg/util/wait"
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
// "source-controller") and its Companions into dir and returns the
// controller binary's path; the error carries the compiler's output.
//
// When EDDY_BUILT_BIN_DIR names a directory holding <name> and its
// companions (`make test` sets
// it to bin/, which its `build` prerequisite has just filled), that binary
// is returned instead: it is the one users run, and linking each controller
// again for every test package cost minutes of a CI run.
func BuildController(name, dir string) (string, error) {
	return build(name, dir, append([]string{"./" + name}, Companions[name]...))
}

// build returns EDDY_BUILT_BIN_DIR/<name> when that directory holds the
// binary of each of pkgs, else builds pkgs into dir and returns dir/<name>.
func build(name, dir string, pkgs []string) (string, error) {
	if built := os.Getenv("EDDY_BUILT_BIN_DIR"); built != "" && allBuilt(built, pkgs) {
		return filepath.Join(built, name), nil
	}
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return filepath.Join(dir, name), nil
}

// Companions are the helper binaries a controller runs, by package; each
// is built beside the controller, where it looks for them
// (kustomize-controller's SOPS helper eddy-sops).
var Companions = map[string][]string{
	"kustomize-controller": {"./kustomize-controller/cmd/eddy-sops"},
}

// allBuilt tells whether dir holds the binary of each package.
func allBuilt(dir string, pkgs []string) bool {
	for _, p := range pkgs {
		fi, err := os.Stat(filepath.Join(dir, filepath.Base(p)))
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
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
	return start(exe, logPath, nil, append([]string{"--kubeconfig=" + e.KubeconfigPath}, args...))
}

// start runs exe with env added to this process's environment, a free
// --health-addr and --metrics-addr=0 followed by args, as StartController.
func start(exe, logPath string, env, args []string) (*Process, error) {
	health, err := FreePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args = append([]string{fmt.Sprintf("--health-addr=127.0.0.1:%d", health), "--metrics-addr=0"}, args...)
	p := &Process{LogPath: logPath, cmd: exec.Command(exe, args...), log: log}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	ready := func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, ready); err != nil {
		p.Stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s not ready after 30s\n%s", filepath.Base(exe), b)
	}
	return p, nil
}

// PID returns the process id, e.g. to read /proc/<pid>/status while it runs.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop interrupts the process, waits for it to exit and closes its log.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	_ = p.cmd.Wait()
	p.log.Close()
}

// Kill ends the process with SIGKILL (no graceful shutdown: work in flight
// is cut), waits for it to exit and closes its log. Calling Stop after it
// is harmless.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.log.Close()
}

// RunController builds the controller name of this workspace into a test
// directory and runs it with RunBinary until t ends. It fails t on any error.
func RunController(t testing.TB, e *Environment, name string, args ...string) *Process {
	t.Helper()
	exe, err := BuildController(name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return RunBinary(t, e, exe, args...)
}

// RunBinary starts the controller binary exe with StartController(e, exe,
// log, args...), the log in a test directory, and stops it when t ends;
// when t failed, the log is printed. It fails t on any error.
func RunBinary(t testing.TB, e *Environment, exe string, args ...string) *Process {
	t.Helper()
	name := filepath.Base(exe)
	p, err := StartController(e, exe, filepath.Join(t.TempDir(), name+".log"), args...)
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

// ControllerNames are the workspace's controller binaries, each built from
// ./<name>.
var ControllerNames = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller", "application-controller", "image-reflector-controller", "image-automation-controller", "source-watcher"}

// EachController builds each of ControllerNames into a test directory and
// runs f with its name and path in a subtest named after it; a failed build
// fails that subtest.
func EachController(t *testing.T, f func(t *testing.T, name, exe string)) {
	bin := t.TempDir()
	for _, name := range ControllerNames {
		t.Run(name, func(t *testing.T) {
			exe, err := BuildController(name, bin)
			if err != nil {
				t.Fatal(err)
			}
			f(t, name, exe)
		})
	}
}

// BuildBinary builds the workspace's main package pkg (e.g.
// "./kustomize-controller/cmd/eddy-sops") into dir and returns the
// binary's path, or returns EDDY_BUILT_BIN_DIR's binary of that name as
// BuildController does.
func BuildBinary(pkg, dir string) (string, error) {
	return build(filepath.Base(pkg), dir, []string{pkg})
}
