package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ui prints flux-style progress lines: ► action, ◎ waiting, ✔ done,
// ✗ failure, ⚠ warning. Colour and the spinner only on a terminal (and not
// with NO_COLOR).
type ui struct {
	out   io.Writer
	color bool
	tty   bool

	mu      sync.Mutex
	spinMsg string
	stop    chan struct{}
	done    chan struct{}
}

func newUI(out io.Writer) *ui {
	u := &ui{out: out}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		u.tty = true
		u.color = os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	}
	return u
}

func (u *ui) paint(code, s string) string {
	if !u.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (u *ui) line(sym, code, format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.spinMsg != "" {
		fmt.Fprint(u.out, "\r\x1b[2K")
	}
	fmt.Fprintf(u.out, "%s %s\n", u.paint(code, sym), fmt.Sprintf(format, args...))
}

func (u *ui) Action(format string, args ...any)  { u.line("►", "34", format, args...) }
func (u *ui) Waiting(format string, args ...any) { u.line("◎", "33", format, args...) }
func (u *ui) Success(format string, args ...any) { u.line("✔", "32", format, args...) }
func (u *ui) Failure(format string, args ...any) { u.line("✗", "31", format, args...) }
func (u *ui) Warning(format string, args ...any) { u.line("⚠", "33", format, args...) }
func (u *ui) Info(format string, args ...any)    { u.line(" ", "0", format, args...) }
func (u *ui) Alert(format string, args ...any)   { u.line("◆", "35", format, args...) }

// Spin shows msg with a spinner and the elapsed time until the returned
// function is called. Off a terminal it prints msg once as a waiting line.
func (u *ui) Spin(msg string) (stop func()) {
	if !u.tty {
		u.Waiting("%s", msg)
		return func() {}
	}
	u.mu.Lock()
	u.spinMsg = msg
	u.stop, u.done = make(chan struct{}), make(chan struct{})
	stopC, doneC := u.stop, u.done
	u.mu.Unlock()
	start := time.Now()
	go func() {
		defer close(doneC)
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			u.mu.Lock()
			m := u.spinMsg
			fmt.Fprintf(u.out, "\r\x1b[2K%s %s (%s)", u.paint("33", frames[i%len(frames)]), m, time.Since(start).Round(time.Second))
			u.mu.Unlock()
			select {
			case <-stopC:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(stopC)
		<-doneC
		u.mu.Lock()
		fmt.Fprint(u.out, "\r\x1b[2K")
		u.spinMsg = ""
		u.mu.Unlock()
	}
}

// SetSpin changes the message of the running spinner.
func (u *ui) SetSpin(msg string) {
	u.mu.Lock()
	if u.spinMsg != "" {
		u.spinMsg = msg
	}
	u.mu.Unlock()
}

// oneLine shortens s to its first line.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
