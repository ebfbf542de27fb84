package ui

import (
	"bytes"
	"strings"
	"testing"
)

// The demo's summary with colours on: each column starts at the same
// column on screen in every row, whatever escape sequences or wide runes a
// cell holds.
func TestWriteTableAlignsOnVisibleWidth(t *testing.T) {
	u := &UI{color: true}
	rows := [][]string{
		{"STEP", "RESULT", "TIME", "OBSERVED"},
		{"1 first sync", u.Paint("32", "ok"), "12.3s", "12 objects applied"},
		{"2 drift corrected", u.Paint("31", "failed"), "1.1s", u.Paint("1", "bold") + " and plain"},
		{"3 commit: scale cart-api 2 → 4", "ok", "900ms", "日本語 wide runes"},
		{"4 日本", "ok", "1s", "x"},
	}
	var out bytes.Buffer
	if err := WriteTable(&out, rows, 2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\x1b[32mok\x1b[0m") {
		t.Fatalf("the coloured cell lost its colour:\n%q", out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(rows) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(rows), out.String())
	}
	// Each row's cells found in order; where each starts on screen.
	starts := func(n int) []int {
		var s []int
		at := 0
		for _, cell := range rows[n] {
			i := strings.Index(lines[n][at:], cell)
			if i < 0 {
				t.Fatalf("line %d %q does not hold cell %q", n, lines[n], cell)
			}
			s = append(s, VisibleWidth(lines[n][:at+i]))
			at += i + len(cell)
		}
		return s
	}
	header := starts(0)
	for n := 1; n < len(rows); n++ {
		for i, got := range starts(n) {
			if got != header[i] {
				t.Errorf("row %d: column %s starts at screen column %d, its header at %d:\n%s",
					n, rows[0][i], got, header[i], StripEscapes(out.String()))
			}
		}
	}
	for n, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d ends in spaces: %q", n, l)
		}
	}
}

func TestVisibleWidth(t *testing.T) {
	for s, want := range map[string]int{
		"":                           0,
		"ok":                         2,
		"\x1b[32mok\x1b[0m":          2,
		"\x1b[1;38;5;208mbold\x1b[m": 4,
		"\r\x1b[2K⠋ waiting (3s)":    14,
		"→ ⇒ ✔":                      5,
		"日本":                         4,
		"e\u0301":                    1,
		"\x1b]0;title\x07visible":    7,
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\": 4,
	} {
		if got := VisibleWidth(s); got != want {
			t.Errorf("VisibleWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

// A spinner's line is cut to fit the terminal: a line that wraps cannot be
// erased with "\r\x1b[2K".
func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly 10", 10, "exactly 10"},
		{"a bit longer than ten", 10, "a bit lon…"},
		{"日本語の文字", 5, "日本…"},
		{"anything", 0, ""},
	} {
		got := Truncate(c.s, c.n)
		if got != c.want || VisibleWidth(got) > c.n {
			t.Errorf("Truncate(%q, %d) = %q (width %d), want %q", c.s, c.n, got, VisibleWidth(got), c.want)
		}
	}
}

// The stop function of a spinner may be called more than once (a defer and
// an early stop): only the first stops it.
func TestSpinStopTwice(t *testing.T) {
	var out bytes.Buffer
	u := &UI{out: &out, tty: true, fd: -1}
	stop := u.Spin("waiting")
	stop()
	stop()
	if !strings.Contains(out.String(), "waiting") || !strings.HasSuffix(out.String(), "\r\x1b[2K") {
		t.Errorf("spinner output %q; want its frame, then the line erased", out.String())
	}
}

// With colours on, every progress line starts with its symbol painted,
// and an Info line with two plain spaces: no escape codes around a blank.
func TestLinesPaintTheirSymbolOnly(t *testing.T) {
	var out bytes.Buffer
	u := &UI{out: &out, color: true}
	u.Success("up in %s", "12.8s")
	u.Waiting("running in the foreground")
	u.Info("configmap/x created")
	want := "\x1b[32m✔\x1b[0m up in 12.8s\n" +
		"\x1b[33m◎\x1b[0m running in the foreground\n" +
		"  configmap/x created\n"
	if out.String() != want {
		t.Errorf("lines:\n%q\nwant\n%q", out.String(), want)
	}
}
