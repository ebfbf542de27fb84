package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/eddyops/eddy/cli/internal/dev"
	"github.com/eddyops/eddy/pkg/process"
	"github.com/hinshun/vt10x"
)

// The terminal e2e tests run the built bin/eddy as its own session on a
// pseudo-terminal, as a user at a terminal does: stdout is a TTY, so the
// spinner and colours are on (the other e2e tests use pipes, where they
// are off). What eddy wrote is rendered by a terminal emulator and checked
// as the user would see it.

// ttyRun is one eddy process on a pseudo-terminal.
type ttyRun struct {
	t    *testing.T
	u    *user // whose environment a failure diagnoses
	name string
	cols int
	cmd  *exec.Cmd
	pty  *os.File

	mu     sync.Mutex
	out    bytes.Buffer
	read   chan struct{} // closed when the pty reads EOF or EIO: no writer is left
	exited chan struct{} // closed when the process was reaped
	err    error         // its exit, once exited
}

// startTTY starts eddy with args on a new pseudo-terminal of cols columns,
// with TERM=xterm-256color, and NO_COLOR=1 when noColor.
func (u *user) startTTY(cols int, noColor bool, args ...string) *ttyRun {
	u.t.Helper()
	cmd := u.command(args...)
	env := []string{"TERM=xterm-256color"}
	for _, e := range cmd.Env {
		if !strings.HasPrefix(e, "NO_COLOR=") && !strings.HasPrefix(e, "TERM=") {
			env = append(env, e)
		}
	}
	if noColor {
		env = append(env, "NO_COLOR=1")
	}
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: uint16(cols)})
	if err == nil {
		f, err = pollable(f)
	}
	if err != nil {
		u.t.Fatal(err)
	}
	r := &ttyRun{t: u.t, u: u, name: "eddy " + strings.Join(args, " "), cols: cols, cmd: cmd, pty: f,
		read: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil { // EIO once every process closed the terminal
				return
			}
		}
	}()
	go func() { r.err = cmd.Wait(); close(r.exited) }()
	u.t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
		f.Close()
	})
	return r
}

// pollable returns a non-blocking copy of the pty master f and closes f.
// creack/pty leaves the master in blocking mode (its ioctls use Fd), where
// Close waits for a pending Read; the copy is managed by Go's poller, so
// Close ends the Read and really closes the master: the terminal hangs up.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, err
	}
	return os.NewFile(fd, f.Name()), nil
}

func (r *ttyRun) output() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.out.Bytes())
}

// waitFor waits until the output shows s; it fails when the process exits first.
func (r *ttyRun) waitFor(s string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.After(timeout)
	for !bytes.Contains(r.output(), []byte(s)) {
		select {
		case <-r.exited:
			<-r.read
			if !bytes.Contains(r.output(), []byte(s)) {
				r.u.diagnose()
				r.t.Fatalf("%s exited (%v) before it printed %q; the terminal shows:\n%s", r.name, r.err, s, r.screen())
			}
		case <-deadline:
			r.u.diagnose() // before the cleanup kills the process and its environment
			r.t.Fatalf("%s did not print %q within %s; the terminal shows:\n%s", r.name, s, timeout, r.screen())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// wait waits for the process to exit and for everything it wrote, and
// returns its exit error.
func (r *ttyRun) wait(timeout time.Duration) error {
	r.t.Helper()
	select {
	case <-r.exited:
	case <-time.After(timeout):
		r.u.diagnose()
		r.t.Fatalf("%s did not exit within %s; the terminal shows:\n%s", r.name, timeout, r.screen())
	}
	select {
	case <-r.read:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("%s exited, but the terminal stays open (a child process holds it)", r.name)
	}
	return r.err
}

// screen is what a terminal of r.cols columns shows after the output:
// its lines, trailing blanks trimmed. The emulator has rows enough to
// keep all of it, as a terminal's scrollback would.
func (r *ttyRun) screen() string { return strings.Join(render(r.output(), r.cols), "\n") }

func render(out []byte, cols int) []string {
	rows := bytes.Count(out, []byte("\n")) + len(out)/cols + 2
	vt := vt10x.New(vt10x.WithSize(cols, rows))
	_, _ = vt.Write(out)
	var lines []string
	for _, l := range strings.Split(vt.String(), "\n") {
		lines = append(lines, strings.TrimRight(l, " \x00"))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// checkTerminal checks a finished run the way a user reads the terminal:
// exit 0, no panic, no spinner frame left anywhere on the screen, and no
// colour codes at all when noColor (else: colours, so the terminal was
// detected). It returns the screen's lines.
func (r *ttyRun) checkTerminal(timeout time.Duration, noColor bool) []string {
	r.t.Helper()
	return r.checkTerminalExit(timeout, noColor, 0)
}

// checkTerminalExit is checkTerminal for a run that exits with code exit.
func (r *ttyRun) checkTerminalExit(timeout time.Duration, noColor bool, exit int) []string {
	r.t.Helper()
	err := r.wait(timeout)
	out := r.output()
	lines := render(out, r.cols)
	screen := strings.Join(lines, "\n")
	r.t.Logf("$ %s   (on a %d-column terminal; exit: %v)\n%s", r.name, r.cols, err, screen)
	if code := r.cmd.ProcessState.ExitCode(); code != exit {
		r.t.Errorf("%s at a terminal: exit code %d (%v), want %d", r.name, code, err, exit)
	}
	if bytes.Contains(out, []byte("panic:")) || bytes.Contains(out, []byte("goroutine ")) {
		r.t.Errorf("%s at a terminal panicked", r.name)
	}
	var residue []string
	for i, l := range lines {
		if strings.ContainsFunc(l, func(c rune) bool { return c >= 0x2800 && c <= 0x28ff }) {
			residue = append(residue, fmt.Sprintf("line %d: %q", i+1, l))
		}
	}
	if len(residue) > 0 {
		r.t.Errorf("%s: spinner frames left on %d screen line(s), the first %s", r.name, len(residue), residue[0])
	}
	switch codes := sgr.FindAll(out, -1); {
	case noColor && len(codes) > 0:
		r.t.Errorf("%s with NO_COLOR=1 wrote %d colour codes, the first %q", r.name, len(codes), codes[0])
	case !noColor && len(codes) == 0:
		r.t.Errorf("%s at a terminal wrote no colour codes: was the terminal not detected?", r.name)
	}
	return lines
}

// upForeground starts `eddy dev up` at a terminal (NO_COLOR) and waits
// until it runs; it returns the terminal and the environment's state.
func (u *user) upForeground() (*ttyRun, *dev.State) {
	u.t.Helper()
	fg := u.startTTY(80, true, "dev", "up")
	fg.waitFor("press Ctrl-C", 4*time.Minute)
	state, err := dev.ReadState(u.dir())
	if err != nil {
		u.t.Fatal(err)
	}
	return fg, state
}

// TestTerminalDevUp: `eddy dev up` in the foreground at a terminal (NO_COLOR)
// comes up and stays up; `eddy reconcile ks --with-source` and `eddy check`
// (see checkAtTerminal) at a terminal against it; Ctrl-C typed at the terminal stops everything. Then `eddy dev
// up --detach` and `eddy dev down` at a terminal (colours on). Each exits 0
// with no panic and a clean screen.
func TestTerminalDevUp(t *testing.T) {
	u := newUser(t)

	fg, state := u.upForeground()

	rec := u.startTTY(80, true, "reconcile", "ks", "flux-system", "--with-source")
	screen := strings.Join(rec.checkTerminal(2*time.Minute, true), "\n")
	for _, want := range []string{"✔ fetched revision main@sha1:", "✔ applied revision main@sha1:"} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy reconcile at a terminal does not show %q", want)
		}
	}

	checkAtTerminal(t, u)

	if _, err := fg.pty.Write([]byte{3}); err != nil { // Ctrl-C, as typed
		t.Fatal(err)
	}
	screen = strings.Join(fg.checkTerminal(2*time.Minute, true), "\n")
	for _, want := range []string{"NAMESPACE", "kustomization/apps", "✔ up in ", "◎ running in the foreground: press Ctrl-C",
		"✔ stopped; nothing of the environment is left running"} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy dev up at a terminal does not show %q", want)
		}
	}
	checkAllGone(t, state, u.dir())

	// With a shard and the web UI, so that their processes are stopped by
	// down as well.
	up := u.startTTY(80, false, "dev", "up", "--detach", "--shards=1", "--ui", "--ui-listen=127.0.0.1:0")
	screen = strings.Join(up.checkTerminal(4*time.Minute, false), "\n")
	for _, want := range []string{"environment running", "kustomization/apps", "✔ up in ", "Run `eddy dev down` to stop it.", "UI: http://127.0.0.1:"} {
		if !strings.Contains(screen, want) {
			t.Errorf("eddy dev up --detach at a terminal does not show %q", want)
		}
	}
	if blank := []byte("\x1b[0m \x1b[0m"); bytes.Contains(up.output(), blank) {
		t.Errorf("eddy dev up --detach at a terminal painted a blank symbol (%q)", blank)
	}
	state, err := dev.ReadState(u.dir())
	if err != nil {
		t.Fatalf("after eddy dev up --detach: %v", err)
	}
	if !slices.ContainsFunc(state.Controllers, func(p process.Status) bool { return p.Name == "kustomize-controller-shard1" }) {
		t.Errorf("eddy dev up --detach --shards=1 runs no kustomize-controller-shard1: %+v", state.Controllers)
	}
	// eddy ui at a terminal against it: the address, then Ctrl-C stops it.
	ui := u.startTTY(80, false, "ui", "--listen=127.0.0.1:0")
	ui.waitFor("eddy ui: http://127.0.0.1:", time.Minute)
	if _, err := ui.pty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	ui.checkTerminal(time.Minute, false)
	down := u.startTTY(80, false, "dev", "down")
	if screen = strings.Join(down.checkTerminal(2*time.Minute, false), "\n"); !strings.Contains(screen, "✔ stopped:") {
		t.Error("eddy dev down at a terminal does not say it stopped")
	}
	checkAllGone(t, state, u.dir())
}

// TestTerminalDevUpHangup: closing the terminal of a foreground `eddy dev
// up` (SIGHUP, as closing a window or losing an ssh session does) stops the
// environment as Ctrl-C does: nothing runs, no state is left.
func TestTerminalDevUpHangup(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		// eddy inherits it, and honours nohup (TestStopSignalsHonourNohup).
		t.Skip("the tests run with SIGHUP ignored (under nohup): eddy dev up keeps running when its terminal closes")
	}
	u := newUser(t)
	fg, state := u.upForeground()
	fg.pty.Close() // the terminal goes away: the kernel sends SIGHUP to eddy
	select {
	case <-fg.exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("eddy dev up did not exit within 2m of its terminal closing")
	}
	if fg.err != nil {
		t.Errorf("eddy dev up after its terminal closed: %v; want it to stop the environment and exit 0", fg.err)
	}
	checkAllGone(t, state, u.dir())
}

// demoSteps is the number of steps of `eddy dev demo`: six of
// Kustomizations, four of a HelmRelease.
const demoSteps = 10

// TestTerminalDemo: `eddy dev demo` at a terminal with colours exits 0 with
// a clean screen, its last line says all its steps were observed, and its
// summary table has a row for each, whose columns line up on screen.
func TestTerminalDemo(t *testing.T) {
	u := newUser(t)
	// Wide enough that no summary row wraps.
	demo := u.startTTY(250, false, "dev", "demo")
	lines := demo.checkTerminal(6*time.Minute, false)
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "STEP ") {
			head = i
		}
	}
	if head < 0 || head+demoSteps+1 >= len(lines) {
		t.Fatalf("no summary table (STEP RESULT TIME OBSERVED, %d rows and the closing line) on screen", demoSteps)
	}
	if last, want := lines[head+demoSteps+1], fmt.Sprintf("all %d steps observed;", demoSteps); !strings.Contains(last, want) {
		t.Errorf("the line after the summary's %d rows is %q; want it to say %q", demoSteps, last, want)
	}
	var cols []int
	for _, name := range []string{"RESULT", "TIME", "OBSERVED"} {
		i := strings.Index(lines[head], name)
		if i < 0 {
			t.Fatalf("summary header %q has no %s", lines[head], name)
		}
		cols = append(cols, len([]rune(lines[head][:i])))
	}
	for n := 1; n <= demoSteps; n++ {
		row := []rune(lines[head+n])
		if !strings.HasPrefix(string(row), fmt.Sprintf("%d ", n)) {
			t.Errorf("summary row %d does not start with its step number: %s", n, string(row))
		}
		// Each cell starts under its header, two blanks after the one before.
		cell := func(k int) string {
			c := cols[k]
			if c >= len(row) || row[c] == ' ' || row[c-1] != ' ' || row[c-2] != ' ' {
				return ""
			}
			f, _, _ := strings.Cut(string(row[c:]), " ")
			return f
		}
		if got := cell(0); got != "ok" {
			t.Errorf("summary row %d: %q under RESULT, want ok:\n%s\n%s", n, got, lines[head], string(row))
		}
		if _, err := time.ParseDuration(cell(1)); err != nil {
			t.Errorf("summary row %d: %q under TIME, want a duration:\n%s\n%s", n, cell(1), lines[head], string(row))
		}
		if cell(2) == "" {
			t.Errorf("summary row %d: nothing starts under OBSERVED:\n%s\n%s", n, lines[head], string(row))
		}
	}
}
