package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
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

// TestCommitHashResolvesAPrefixToOneCommit: a prefix of one stored commit
// resolves to it; a prefix two commits share stalls with an error naming
// it; a prefix of none is not found, without stalling. The commits are
// made until two share their first 7 hex digits (about 20,000, at once in
// memory; the sequence is fixed, so the outcome is too).
func TestCommitHashResolvesAPrefixToOneCommit(t *testing.T) {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(0, 0).UTC()}
	seen := map[string]plumbing.Hash{}
	var shared string
	var first plumbing.Hash
	for i := 0; shared == ""; i++ {
		if i > 500_000 {
			t.Fatal("no two commits share a 7-digit prefix")
		}
		obj := repo.Storer.NewEncodedObject()
		if err := (&object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("c%d", i)}).Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := repo.Storer.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = h
		}
		p := h.String()[:7]
		if _, ok := seen[p]; ok {
			shared = p
		}
		seen[p] = h
	}
	var stalling errStalling
	if _, err := commitHash(repo, shared); !errors.As(err, &stalling) || !strings.Contains(err.Error(), fmt.Sprintf("commit %q is ambiguous", shared)) {
		t.Errorf("shared prefix %s: %v, want a stalling ambiguity naming it", shared, err)
	}
	if first.String()[:7] != shared {
		if h, err := commitHash(repo, first.String()[:12]); err != nil || h != first {
			t.Errorf("a unique prefix: %s, %v; want %s", h, err, first)
		}
	}
	if _, err := commitHash(repo, strings.Repeat("0", 40)); !errors.As(err, &stalling) {
		t.Errorf("the zero SHA: %v, want a stalling refusal", err)
	}
	missing := ""
	for n := 0xfffffff; missing == ""; n-- {
		if _, ok := seen[fmt.Sprintf("%07x", n)]; !ok {
			missing = fmt.Sprintf("%07x", n)
		}
	}
	if _, err := commitHash(repo, missing); err == nil || errors.As(err, &stalling) {
		t.Errorf("an unknown prefix: %v, want a plain not-found", err)
	}
}
