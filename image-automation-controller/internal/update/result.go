// Package update applies ImagePolicies' latest images to YAML files with
// Flux's Setters strategy: a scalar whose line comment is a marker
// `# {"$imagepolicy": "<ns>:<name>"}` (optionally with a `:tag`, `:name` or
// `:digest` suffix) is set from the policy's status.latestRef.
//
// Unlike Flux, which re-serialises every changed file through kyaml, only
// the marked scalar's bytes are replaced: comments, quoting, indentation,
// document separators and line endings of the rest of the file stay as
// they were.
package update

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// LatestRef is an ImagePolicy's status.latestRef: image name (as the
// ImageRepository's spec.image), tag and, when reflected, digest
// ("sha256:…").
type LatestRef struct {
	Name, Tag, Digest string
}

// String is the whole image reference a marker without suffix writes:
// `name:tag`, or `name:tag@digest` with a digest (Flux's latestRef.String).
func (r LatestRef) String() string {
	s := r.Name + ":" + r.Tag
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// ObjectIdentifier names the Kubernetes object (YAML document) a change is
// in; its fields are those Flux's template data exposes
// (`{{ $resource.Kind }} {{ $resource.Name }}`). Empty for a document that
// is not a Kubernetes object.
type ObjectIdentifier struct {
	APIVersion, Kind, Name, Namespace string
}

// String is `Kind/namespace/name`, without the empty parts.
func (o ObjectIdentifier) String() string {
	parts := []string{}
	for _, p := range []string{o.Kind, o.Namespace, o.Name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// Change is one marked scalar set to a new value. OldValue, NewValue and
// Setter (the marker, e.g. `apps:podinfo:tag`) are Flux's fields; File
// (slash-separated, relative to the updated path) and Line (1-based) say
// where, beyond Flux.
type Change struct {
	OldValue string
	NewValue string
	Setter   string
	File     string
	Line     int
}

// ObjectChanges are the changes in one file, by object.
type ObjectChanges map[ObjectIdentifier][]Change

// Result is what an update changed: Flux's `.Changed` template data.
type Result struct {
	// FileChanges maps a changed file (relative to the updated path) to
	// its changes by object.
	FileChanges map[string]ObjectChanges
	// Skipped are the files holding the marker token that were not
	// updated because they are not valid YAML (Flux skips them too), with
	// the parser's error; relative, sorted.
	Skipped []SkippedFile
	// UnknownPolicies are the markers naming a policy that is not among
	// the policies given (Flux leaves them unchanged, silently), in file
	// and line order.
	UnknownPolicies []Marker
}

// SkippedFile is a file left alone and why.
type SkippedFile struct {
	File, Reason string
}

// Marker is a marker found in a file.
type Marker struct {
	File   string
	Line   int
	Setter string
}

func (r *Result) add(file string, obj ObjectIdentifier, c Change) {
	if r.FileChanges == nil {
		r.FileChanges = map[string]ObjectChanges{}
	}
	if r.FileChanges[file] == nil {
		r.FileChanges[file] = ObjectChanges{}
	}
	r.FileChanges[file][obj] = append(r.FileChanges[file][obj], c)
}

// Empty is true when nothing changed.
func (r Result) Empty() bool { return len(r.FileChanges) == 0 }

// Files returns the changed files, sorted.
func (r Result) Files() []string { return slices.Sorted(maps.Keys(r.FileChanges)) }

// List returns every change, by file then line.
func (r Result) List() []Change {
	var all []Change
	for _, f := range r.Files() {
		for _, cs := range r.FileChanges[f] {
			all = append(all, cs...)
		}
	}
	slices.SortStableFunc(all, func(a, b Change) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return all
}

// Changes returns the changes with the same old value, new value and
// setter listed once (Flux's `.Changed.Changes`), by file then line.
func (r Result) Changes() []Change {
	type key struct{ old, new, setter string }
	seen := map[key]bool{}
	var out []Change
	for _, c := range r.List() {
		k := key{c.OldValue, c.NewValue, c.Setter}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// Objects returns the changes by object over all files (Flux's
// `.Changed.Objects`).
func (r Result) Objects() ObjectChanges {
	out := ObjectChanges{}
	for _, f := range r.Files() {
		for obj, cs := range r.FileChanges[f] {
			out[obj] = append(out[obj], cs...)
		}
	}
	return out
}

// Summary is one line per distinct change, `old -> new` (`.Changed.Summary`,
// added in Flux v2.10; Eddy's wording).
func (r Result) Summary() string {
	var b strings.Builder
	for _, c := range r.Changes() {
		fmt.Fprintf(&b, "%s -> %s\n", c.OldValue, c.NewValue)
	}
	return b.String()
}
