package ssa

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The drift messages of events are written and read here only:
// kustomize-controller's DriftCorrected (DriftMessage, ParseDriftMessage)
// and helm-controller's DriftDetected (ReleaseDriftMessage,
// ParseReleaseDriftMessage). The events carry the same drift structured in
// DriftAnnotation; the web UI parses a message only for an event without
// it (recorded before it existed, or too large) or combined by client-go.

// The words of kustomize-controller's DriftCorrected event message, which
// DriftMessage writes and ParseDriftMessage reads.
const (
	driftedWord   = " drifted: "
	correctedWord = "; corrected"
	arrowWord     = " → "
	byWord        = " (by "
	fieldSep      = ", "
	absentValue   = "<absent>"
	maskedValue   = "***" // kustomize-controller masks with *****, helm-controller with ***
)

// DriftMessage is the message of kustomize-controller's DriftCorrected
// event for the fields of meta that were set back:
// `<Kind>/<ns>/<name> drifted: <path> <desired> → <live> (by <manager>), …; corrected`,
// each value JSON or "<absent>", " (by …)" left out when the manager is
// unknown. The controller masks secret values in it afterwards (with ***).
func DriftMessage(meta ObjMeta, drift []FieldDrift) string {
	fields := make([]string, len(drift))
	for i, d := range drift {
		fields[i] = d.String()
	}
	return meta.String() + driftedWord + strings.Join(fields, fieldSep) + correctedWord
}

// ParseDriftMessage reads a DriftMessage back: the object (`Kind/ns/name`,
// or `Kind/name`) and its fields, ok false when msg is not such a message.
// Values are read as JSON, so they may hold ", ", " → " or " (by "; an
// absent value ("<absent>") is one for FieldDrift.Absent; a value masked
// whole (***** where a number was) is kept as is, and a value that masking
// left invalid as JSON is read up to the next separator. The fields are
// read back exactly (round trip) when no path holds " → " or " (by " and no
// manager holds "), ".
func ParseDriftMessage(msg string) (object string, fields []FieldDrift, ok bool) {
	body, found := strings.CutSuffix(msg, correctedWord)
	if !found {
		return "", nil, false
	}
	object, rest, found := strings.Cut(body, driftedWord)
	if !found || object == "" || strings.ContainsAny(object, " \n") {
		return "", nil, false
	}
	fields, ok = ParseDriftFields(rest)
	if !ok {
		return "", nil, false
	}
	return object, fields, true
}

// ParseDriftFields reads a comma-separated list of fields as FieldDrift.String
// writes them (`<path> <desired> → <live> (by <manager>)`), as both
// kustomize-controller's DriftCorrected events and helm-controller's drift
// summaries (after "<Kind>/<ns>/<name> changed (…): ") hold them; ok false
// when s is not such a list. See ParseDriftMessage for the values.
func ParseDriftFields(s string) ([]FieldDrift, bool) {
	var out []FieldDrift
	for {
		f, rest, ok := parseField(s)
		if !ok {
			return nil, false
		}
		out = append(out, f)
		if rest == "" {
			return out, true
		}
		s = strings.TrimPrefix(rest, fieldSep) // parseField ends at ", " or the end
	}
}

// parseField reads one field at the start of s and returns the text after
// it, which is "" or starts with ", ".
func parseField(s string) (FieldDrift, string, bool) {
	// The path ends at the first space after which a value and an arrow
	// follow: a path may hold spaces, a value never starts with one.
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' || i == 0 {
			continue
		}
		path := s[:i]
		desired, rest, ok := readValue(s[i+1:], true)
		if !ok || !strings.HasPrefix(rest, arrowWord) {
			continue
		}
		live, rest, ok := readValue(rest[len(arrowWord):], false)
		if !ok {
			continue
		}
		f := FieldDrift{Path: path, Desired: desired, Live: live,
			desiredAbsent: desired == absentValue, liveAbsent: live == absentValue}
		if strings.HasPrefix(rest, byWord) {
			// The manager ends at the first ")" that ends the message or
			// precedes the next field.
			m := rest[len(byWord):]
			end := -1
			for j := 0; j < len(m); j++ {
				if m[j] == ')' && (j == len(m)-1 || strings.HasPrefix(m[j+1:], fieldSep)) {
					end = j
					break
				}
			}
			if end <= 0 {
				continue
			}
			f.Manager, rest = m[:end], m[end+1:]
		}
		if rest != "" && !strings.HasPrefix(rest, fieldSep) {
			continue
		}
		return f, rest, true
	}
	return FieldDrift{}, "", false
}

// readValue reads a value at the start of s: "<absent>", JSON, a mask
// (three or more "*"), or, when masking broke the JSON, the text up to the
// next separator (" → " for the desired value; " (by ", ", " or the end
// for the live one).
func readValue(s string, desired bool) (value, rest string, ok bool) {
	if s == "" || s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r' {
		return "", "", false
	}
	ends := func(r string) bool {
		if desired {
			return strings.HasPrefix(r, arrowWord)
		}
		return r == "" || strings.HasPrefix(r, fieldSep) || strings.HasPrefix(r, byWord)
	}
	if strings.HasPrefix(s, absentValue) && ends(s[len(absentValue):]) {
		return absentValue, s[len(absentValue):], true
	}
	if stars := len(s) - len(strings.TrimLeft(s, "*")); stars >= len(maskedValue) && ends(s[stars:]) {
		return s[:stars], s[stars:], true
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err == nil {
		n := int(dec.InputOffset())
		if ends(s[n:]) {
			return s[:n], s[n:], true
		}
	}
	// Masking may leave a value that is no JSON (4***2): up to the next
	// separator.
	if !strings.Contains(s, maskedValue) {
		return "", "", false
	}
	for i := 1; i <= len(s); i++ {
		if ends(s[i:]) {
			if !strings.Contains(s[:i], maskedValue) {
				return "", "", false
			}
			return s[:i], s[i:], true
		}
	}
	return "", "", false
}

// ObjectDrift is one object of helm-controller's drift message.
type ObjectDrift struct {
	// Object is `Kind/namespace/name`, or `Kind/name`.
	Object string
	// State is "changed", "removed" (missing from the cluster) or "excluded".
	State string
	// Fields of a changed object, when the message lists them.
	Fields []FieldDrift
}

// releaseDriftPrefix and releaseDriftInfix frame helm-controller's
// DriftDetected message (ReleaseDriftMessage).
const (
	releaseDriftPrefix = "Cluster state of release "
	releaseDriftInfix  = " has drifted from the desired state:\n"
)

// String is the object's line of helm-controller's DriftDetected message:
// `<object> <state>`, for a changed object followed by ` (A additions, C
// changes, R removals)` and, when it lists fields, `: <fields>`
// (FieldDrift.String, comma-separated). Additions, changes and removals
// count the fields the live object lacks, differs in and has beyond the
// desired one. Flux compatible up to the fields, which are Eddy's.
func (o ObjectDrift) String() string {
	line := o.Object + " " + o.State
	if o.State != "changed" {
		return line
	}
	var add, chg, rem int
	fields := make([]string, 0, len(o.Fields))
	for _, f := range o.Fields {
		switch {
		case f.liveAbsent:
			add++
		case f.desiredAbsent:
			rem++
		default:
			chg++
		}
		fields = append(fields, f.String())
	}
	line += fmt.Sprintf(" (%d additions, %d changes, %d removals)", add, chg, rem)
	if len(fields) > 0 {
		line += ": " + strings.Join(fields, fieldSep)
	}
	return line
}

// ReleaseDriftSummary is one ObjectDrift.String line per object, joined
// by newlines; "" for none.
func ReleaseDriftSummary(objects []ObjectDrift) string {
	lines := make([]string, len(objects))
	for i, o := range objects {
		lines[i] = o.String()
	}
	return strings.Join(lines, "\n")
}

// ReleaseDriftMessage is helm-controller's DriftDetected message for
// release (`<namespace>/<name>.v<version>`): "Cluster state of release
// <release> has drifted from the desired state:\n" and ReleaseDriftSummary
// of objects. ParseReleaseDriftMessage reads it back.
func ReleaseDriftMessage(release string, objects []ObjectDrift) string {
	return releaseDriftPrefix + release + releaseDriftInfix + ReleaseDriftSummary(objects)
}

// ParseReleaseDriftMessage reads helm-controller's DriftDetected event
// message, "Cluster state of release <ns>/<name>.v<version> has drifted
// from the desired state:\n" and one line per object (`<object> removed`,
// `<object> excluded`, `<object> changed (A additions, C changes, R
// removals)[: <fields>]`, the fields as ParseDriftFields reads them). ok is
// false when msg is not such a message. Its DriftCorrected message names
// objects only (`<object> created|configured`) and is not read here.
func ParseReleaseDriftMessage(msg string) (release string, objects []ObjectDrift, ok bool) {
	rest, found := strings.CutPrefix(msg, releaseDriftPrefix)
	if !found {
		return "", nil, false
	}
	release, rest, found = strings.Cut(rest, releaseDriftInfix)
	if !found || release == "" || rest == "" {
		return "", nil, false
	}
	for _, line := range strings.Split(rest, "\n") {
		object, tail, found := strings.Cut(line, " ")
		if !found || object == "" {
			return "", nil, false
		}
		o := ObjectDrift{Object: object}
		switch {
		case tail == "removed" || tail == "excluded":
			o.State = tail
		case strings.HasPrefix(tail, "changed ("):
			o.State = "changed"
			counts, fields, hasFields := strings.Cut(tail[len("changed ("):], "): ")
			if !hasFields {
				counts, found = strings.CutSuffix(counts, ")")
				if !found {
					return "", nil, false
				}
			}
			var a, c, r int
			if n, err := fmt.Sscanf(counts, "%d additions, %d changes, %d removals", &a, &c, &r); err != nil || n != 3 {
				return "", nil, false
			}
			if hasFields {
				if o.Fields, ok = ParseDriftFields(fields); !ok {
					return "", nil, false
				}
			}
		default:
			return "", nil, false
		}
		objects = append(objects, o)
	}
	return release, objects, true
}
