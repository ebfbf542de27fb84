// Package ui prints the eddy command's progress the way the flux CLI does,
// and lays out tables by their width on screen.
package ui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"
)

// UI prints flux-style progress lines: ► action, ◎ waiting, ✔ done,
// ✗ failure, ⚠ warning. Colour and the spinner only on a terminal (and not
// with NO_COLOR).
type UI struct {
	out   io.Writer
	color bool
	tty   bool
	fd    int // out's file descriptor when tty, for the terminal's width

	mu      sync.Mutex
	spinMsg string
}

// New returns a UI that writes to out.
func New(out io.Writer) *UI {
	u := &UI{out: out}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		u.tty, u.fd = true, int(f.Fd())
		u.color = os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
	}
	return u
}

// Paint wraps s in the SGR colour code (e.g. "32" green, "1" bold) when
// colour is on; code "" leaves s as it is.
func (u *UI) Paint(code, s string) string {
	if !u.color || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (u *UI) line(sym, code, format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.spinMsg != "" {
		fmt.Fprint(u.out, "\r\x1b[2K")
	}
	fmt.Fprintf(u.out, "%s %s\n", u.Paint(code, sym), fmt.Sprintf(format, args...))
}

// Out is the writer the UI prints to.
func (u *UI) Out() io.Writer { return u.out }

// Action, Waiting, Success, Failure, Warning and Alert print one line
// with their symbol (format as fmt.Sprintf), erasing a running spinner first.
func (u *UI) Action(format string, args ...any)  { u.line("►", "34", format, args...) }
func (u *UI) Waiting(format string, args ...any) { u.line("◎", "33", format, args...) }
func (u *UI) Success(format string, args ...any) { u.line("✔", "32", format, args...) }
func (u *UI) Failure(format string, args ...any) { u.line("✗", "31", format, args...) }
func (u *UI) Warning(format string, args ...any) { u.line("⚠", "33", format, args...) }
func (u *UI) Alert(format string, args ...any)   { u.line("◆", "35", format, args...) }

// Info prints a detail line under the previous one: no symbol, indented
// by two spaces so that its text lines up with the symbol lines' text, and
// never coloured (a painted blank is only escape codes around a space).
func (u *UI) Info(format string, args ...any) { u.line(" ", "", format, args...) }

// Generate prints flux's "✚ generating …" line.
func (u *UI) Generate(format string, args ...any) { u.line("✚", "32", format, args...) }

// Spin shows msg with a spinner and the elapsed time until the returned
// function is called; calling it again does nothing. Off a terminal it
// prints msg once as a waiting line. The spinner's line is cut to the
// terminal's width: a line that wrapped could not be erased by "\r\x1b[2K",
// and each frame would leave its first rows behind.
func (u *UI) Spin(msg string) (stop func()) {
	if !u.tty {
		u.Waiting("%s", msg)
		return func() {}
	}
	u.mu.Lock()
	u.spinMsg = msg
	u.mu.Unlock()
	stopC, doneC := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(doneC)
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			u.mu.Lock()
			text := fmt.Sprintf("%s (%s)", u.spinMsg, time.Since(start).Round(time.Second))
			if cols, _, err := term.GetSize(u.fd); err == nil && cols > 0 {
				// The frame and its space take 2 columns; the last column is
				// left free, where some terminals wrap at once.
				text = Truncate(text, cols-3)
			}
			fmt.Fprintf(u.out, "\r\x1b[2K%s %s", u.Paint("33", frames[i%len(frames)]), text)
			u.mu.Unlock()
			select {
			case <-stopC:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stopC)
			<-doneC
			u.mu.Lock()
			fmt.Fprint(u.out, "\r\x1b[2K")
			u.spinMsg = ""
			u.mu.Unlock()
		})
	}
}

// OneLine shortens s to its first line.
func OneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// VisibleWidth is the number of terminal columns s takes: escape sequences
// (colours) take none, East Asian wide runes two, combining marks none.
func VisibleWidth(s string) int { return ansi.StringWidth(s) }

// StripEscapes removes ANSI escape sequences (colours, erasing) from s.
func StripEscapes(s string) string { return ansi.Strip(s) }

// Truncate cuts s to at most n columns, ending in "…" when it cut.
func Truncate(s string, n int) string { return ansi.Truncate(s, max(n, 0), "…") }

// WriteTable writes rows (the header first) as left-aligned columns gap
// spaces apart, each as wide as its widest cell on screen: unlike
// text/tabwriter it measures VisibleWidth, so coloured cells line up with
// plain ones. The last column is not padded.
func WriteTable(w io.Writer, rows [][]string, gap int) error {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], VisibleWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-VisibleWidth(c)+gap))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
