package render

import (
	"fmt"
	"regexp"
	"strings"
)

// compileGlob compiles a directory include/exclude pattern as Argo CD
// matches it (argocd-contract §1.6): `*` matches any run of characters,
// "/" included; `?` one character; `[abc]`, `[a-z]` and `[!a]` a class;
// `{a,b}` one of the (possibly nested) alternatives; `\` escapes the next
// character. The pattern matches the whole path relative to the app path.
func compileGlob(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 < len(rs) {
				i++
				b.WriteString(regexp.QuoteMeta(string(rs[i])))
			} else {
				b.WriteString(`\\`)
			}
		case '[':
			end := classEnd(rs, i)
			if end < 0 {
				return nil, fmt.Errorf("invalid glob '%s': unclosed '['", pattern)
			}
			b.WriteString(class(rs[i+1 : end]))
			i = end
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				b.WriteString(`\}`)
				continue
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("invalid glob '%s': unclosed '{'", pattern)
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// classEnd is the index of the ']' closing the class opened at rs[open],
// or -1.
func classEnd(rs []rune, open int) int {
	for j := open + 1; j < len(rs); j++ {
		if rs[j] == ']' && j > open+1 {
			return j
		}
	}
	return -1
}

// class is the regexp of a glob character class body ("!" negates).
func class(body []rune) string {
	var b strings.Builder
	b.WriteString("[")
	if len(body) > 0 && body[0] == '!' {
		b.WriteString("^")
		body = body[1:]
	}
	for _, r := range body {
		if r == '-' {
			b.WriteRune(r)
			continue
		}
		b.WriteString(regexp.QuoteMeta(string(r)))
	}
	b.WriteString("]")
	return b.String()
}
