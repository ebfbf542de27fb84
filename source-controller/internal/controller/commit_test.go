package controller

import (
	"strings"
	"testing"
)

// TestTargetCurrentMatchesAShortSHAToItsFullRevision: the artifact of a
// short commit SHA is current when its full SHA starts with it, on the
// same branch; other targets need the exact revision.
func TestTargetCurrentMatchesAShortSHAToItsFullRevision(t *testing.T) {
	full := "0123456789abcdef0123456789abcdef01234567"
	other := strings.Repeat("f", 40)
	cases := []struct {
		name string
		t    target
		rev  string
		want bool
	}{
		{"full commit", target{hash: full, commit: true}, "sha1:" + full, true},
		{"short commit", target{hash: full[:8], commit: true}, "sha1:" + full, true},
		{"short commit, other SHA", target{hash: full[:8], commit: true}, "sha1:" + other, false},
		{"short commit on a branch", target{hash: full[:7], revRef: "main", commit: true}, "main@sha1:" + full, true},
		{"short commit, other branch", target{hash: full[:7], revRef: "main", commit: true}, "dev@sha1:" + full, false},
		{"short commit, bare revision for a branch", target{hash: full[:7], revRef: "main", commit: true}, "sha1:" + full, false},
		{"branch head", target{hash: full, revRef: "main"}, "main@sha1:" + full, true},
		{"branch is no prefix", target{hash: full[:8], revRef: "main"}, "main@sha1:" + full, false},
		{"unknown hash", target{revRef: "main"}, "main@sha1:" + full, false},
	}
	for _, tc := range cases {
		if got := tc.t.current(tc.rev); got != tc.want {
			t.Errorf("%s: current(%q) = %v, want %v", tc.name, tc.rev, got, tc.want)
		}
	}
}

// TestCommitSHAForm: 7 to 40 lower-case hex digits (the spec is lowered
// before).
func TestCommitSHAForm(t *testing.T) {
	for sha, want := range map[string]bool{
		"abcdef0": true, strings.Repeat("a", 40): true, "abcdef": false, strings.Repeat("a", 41): false,
		"abcdefg": false, "main": false, "": false,
	} {
		if got := commitSHA.MatchString(sha); got != want {
			t.Errorf("%q: %v, want %v", sha, got, want)
		}
	}
}
