package update

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// fileEdit collects the byte replacements of one file.
type fileEdit struct {
	data  []byte
	rel   string
	lines []int // byte offset of each line's start, built on first use
	edits []edit
}

// edit replaces data[start:end] with text.
type edit struct {
	start, end int
	text       string
	obj        ObjectIdentifier
	change     Change
}

// visit records the edit of one scalar if its line comment is a marker
// whose value differs from the scalar's.
func (f *fileEdit) visit(n *yaml.Node, flow bool, obj ObjectIdentifier, policies map[string]LatestRef, res *Result) {
	setter := markerSetter(n.LineComment)
	if setter == "" {
		return
	}
	value, ok := setterValue(setter, policies)
	if !ok {
		res.UnknownPolicies = append(res.UnknownPolicies, Marker{File: f.rel, Line: n.Line, Setter: setter})
		return
	}
	if value == "" || value == n.Value {
		return
	}
	start, end, err := f.extent(n, flow)
	if err == nil {
		var text string
		if text, err = render(n.Style, value, flow); err == nil {
			f.edits = append(f.edits, edit{start: start, end: end, text: text, obj: obj,
				change: Change{OldValue: n.Value, NewValue: value, Setter: setter, File: f.rel, Line: n.Line}})
			return
		}
	}
	res.Skipped = append(res.Skipped, SkippedFile{File: f.rel, Reason: fmt.Sprintf("line %d: %v", n.Line, err)})
}

// lineStart returns the byte offset of 1-based line n, -1 past the end.
func (f *fileEdit) lineStart(n int) int {
	if f.lines == nil {
		f.lines = []int{0}
		for i, b := range f.data {
			if b == '\n' {
				f.lines = append(f.lines, i+1)
			}
		}
	}
	if n < 1 || n > len(f.lines) {
		return -1
	}
	return f.lines[n-1]
}

// extent finds the bytes of scalar n in the file: from its line and
// (character) column to the end of the quoted or plain scalar on that
// line. It checks that those bytes decode to n's value, so a scalar it
// cannot locate exactly is refused rather than half replaced.
func (f *fileEdit) extent(n *yaml.Node, flow bool) (int, int, error) {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return 0, 0, fmt.Errorf("a marked block scalar cannot be set")
	}
	ls := f.lineStart(n.Line)
	if ls < 0 {
		return 0, 0, fmt.Errorf("marked scalar not found")
	}
	line := f.data[ls:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	off := 0
	for c := 1; c < n.Column && off < len(line); c++ {
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	rest := line[off:]
	var size int
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		size = quotedEnd(rest, '"')
	case n.Style&yaml.SingleQuotedStyle != 0:
		size = quotedEnd(rest, '\'')
	default:
		size = plainEnd(rest, flow)
	}
	if size <= 0 || decodeScalar(string(rest[:size])) != n.Value {
		return 0, 0, fmt.Errorf("the marked value cannot be replaced in place (multi-line, anchored or tagged)")
	}
	return ls + off, ls + off + size, nil
}

// quotedEnd returns the length of the quoted scalar at the start of s
// (closing quote included), 0 if it does not close on this line.
func quotedEnd(s []byte, q byte) int {
	if len(s) == 0 || s[0] != q {
		return 0
	}
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return 0
}

// plainEnd returns the length of the plain scalar at the start of s: up
// to a comment (" #"), or in a flow collection to ",", "]" or "}", without
// trailing blanks.
func plainEnd(s []byte, flow bool) int {
	end := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
			end = i
			break
		}
		if flow && (s[i] == ',' || s[i] == ']' || s[i] == '}') {
			end = i
			break
		}
	}
	return len(bytes.TrimRight(s[:end], " \t"))
}

// decodeScalar returns the string value of one YAML scalar text, "\x00"
// when it is not a single string scalar.
func decodeScalar(text string) string {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("["+text+"]"), &n); err != nil || len(n.Content) != 1 ||
		len(n.Content[0].Content) != 1 || n.Content[0].Content[0].Kind != yaml.ScalarNode {
		return "\x00"
	}
	return n.Content[0].Content[0].Value
}

// render writes value in the style of the scalar it replaces: quoted stays
// quoted the same way; plain stays plain unless value would then read as
// something else (a number, a boolean, a comment...), when it is
// double-quoted.
func render(style yaml.Style, value string, flow bool) (string, error) {
	if strings.ContainsAny(value, "\n\r") {
		return "", fmt.Errorf("a value spanning lines cannot be set")
	}
	switch {
	case style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(value, "'", "''") + "'", nil
	case style&yaml.DoubleQuotedStyle == 0 && plainSafe(value, flow):
		return value, nil
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"`, nil
}

// plainSafe is true when value written plain reads back as the same string.
func plainSafe(value string, flow bool) bool {
	if value == "" || strings.ContainsAny(value, "\t") || strings.Contains(value, " #") || strings.Contains(value, ": ") {
		return false
	}
	if flow && strings.ContainsAny(value, ",[]{}") {
		return false
	}
	var n yaml.Node
	if yaml.Unmarshal([]byte(value), &n) != nil || len(n.Content) != 1 {
		return false
	}
	s := n.Content[0]
	return s.Kind == yaml.ScalarNode && s.Tag == "!!str" && s.Value == value
}

// apply returns the file with the edits made.
func (f *fileEdit) apply() []byte {
	edits := slices.Clone(f.edits)
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var out bytes.Buffer
	last := 0
	for _, e := range edits {
		out.Write(f.data[last:e.start])
		out.WriteString(e.text)
		last = e.end
	}
	out.Write(f.data[last:])
	return out.Bytes()
}
