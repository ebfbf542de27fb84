package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// minLineLen is the shortest line of a multi-line secret that Values masks
// on its own: the short lines of a PEM block or a JSON document ("}",
// "-----") are punctuation, not secret, and masking them would mask
// ordinary text of a message.
const minLineLen = 8

// Values masks secret values (a Secret's data, strings read from Secrets)
// in messages: status conditions, events and logs. The zero value and nil
// mask nothing.
type Values struct {
	mask  string
	forms []string // longest first
}

// NewValues returns the Values that replace each non-empty secret in
// secrets with mask, in each form a message can quote it in:
//   - as it is;
//   - JSON-escaped, with or without HTML escapes, and Go-quoted (an API
//     server's apply error, a drift report and a Go error quote a value
//     with a quote, a backslash or a newline escaped);
//   - standard base64 (a Secret's data as the API server echoes it);
//   - for a multi-line secret, each of its lines of at least 8 bytes
//     without their indentation (a YAML or PEM block re-indented in a
//     message).
//
// Longer forms are masked first, so a secret that contains another is
// masked whole.
func NewValues(mask string, secrets []string) *Values {
	seen := map[string]bool{}
	v := &Values{mask: mask}
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			v.forms = append(v.forms, f)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s)
		for _, e := range escapes(s) {
			add(e)
		}
		add(base64.StdEncoding.EncodeToString([]byte(s)))
		if strings.Contains(s, "\n") {
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); len(line) >= minLineLen {
					add(line)
				}
			}
		}
	}
	sort.SliceStable(v.forms, func(i, j int) bool { return len(v.forms[i]) > len(v.forms[j]) })
	return v
}

// escapes are s as it reads inside a JSON string (with and without HTML
// escapes) and inside a Go-quoted string.
func escapes(s string) []string {
	var out []string
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) == nil {
			q := strings.TrimSuffix(b.String(), "\n")
			out = append(out, q[1:len(q)-1])
		}
	}
	q := strconv.Quote(s)
	return append(out, q[1:len(q)-1])
}

// Mask returns msg with every form of every secret of v replaced by v's
// mask.
func (v *Values) Mask(msg string) string {
	if v == nil {
		return msg
	}
	for _, f := range v.forms {
		msg = strings.ReplaceAll(msg, f, v.mask)
	}
	return msg
}
