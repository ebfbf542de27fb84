package policy

import (
	"errors"
	"testing"
)

// acceptance are the tags of the acceptance test.
var acceptance = []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0", "latest"}

func TestSemVerSelectsHighestInRangeAndPreReleasesOnlyWithPreReleaseRange(t *testing.T) {
	for _, c := range []struct{ rng, want string }{
		{"^1.x", "1.1.0"},
		{">=1.0.0-0 <2.0.0-0", "1.2.0-rc.1"},
		{">=1.0.0", "2.0.0"},
		{"1.0.x", "1.0.0"},
	} {
		p, err := NewSemVer(c.rng)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Select(p, nil, acceptance); err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.rng, got, err, c.want)
		}
	}
}

func TestSemVerKeepsLeadingVAndRefusesNonStrictVersions(t *testing.T) {
	p, _ := NewSemVer(">=1.0.0")
	if got, _ := p.Latest([]string{"v1.3.0", "1.2.0", "1.4", "01.5.0"}); got != "v1.3.0" {
		t.Errorf("got %q, want v1.3.0 (1.4 and 01.5.0 are not strict SemVer)", got)
	}
}

func TestSemVerRangeMatchingNothingIsFluxError(t *testing.T) {
	p, _ := NewSemVer(">=3.0.0")
	_, err := p.Latest(acceptance)
	if !errors.Is(err, ErrNoVersion) || err.Error() != "unable to determine latest version from provided list" {
		t.Errorf("err %v", err)
	}
}

func TestSemVerInvalidRangeIsError(t *testing.T) {
	_, err := NewSemVer("not a range")
	if err == nil || err.Error() != `semver range "not a range" is invalid: improper constraint: "not a range"` {
		t.Errorf("err %v", err)
	}
}

// builds are main-<sha>-<ts> tags: the newest build (ts) is not the last
// by sha.
var builds = []string{"main-ffaa001-1700000300", "main-0bc1234-1700000900", "main-9e8d7c6-1700000100", "pr-12-1700009999", "latest"}

func TestAlphabeticalAndNumericalWithExtractPickByTimestamp(t *testing.T) {
	f, err := NewFilter(`^main-[a-f0-9]+-(?P<ts>[0-9]+)$`, "$ts")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    Policer
		want string
	}{
		{&Alphabetical{Order: OrderAsc}, "main-0bc1234-1700000900"},
		{&Alphabetical{Order: OrderDesc}, "main-9e8d7c6-1700000100"},
		{&Numerical{Order: OrderAsc}, "main-0bc1234-1700000900"},
		{&Numerical{Order: OrderDesc}, "main-9e8d7c6-1700000100"},
	} {
		if got, err := Select(c.p, f, builds); err != nil || got != c.want {
			t.Errorf("%T %+v: got %q, %v; want %q", c.p, c.p, got, err, c.want)
		}
	}
}

func TestAlphabeticalWithoutExtractComparesWholeTags(t *testing.T) {
	f, _ := NewFilter(`^main-`, "")
	p, _ := NewAlphabetical("")
	if got, _ := Select(p, f, builds); got != "main-ffaa001-1700000300" {
		t.Errorf("got %q", got)
	}
}

func TestNumericalFailsOnANonNumericTag(t *testing.T) {
	p, _ := NewNumerical("ASC")
	_, err := Select(p, nil, []string{"1", "2", "latest"})
	if err == nil || err.Error() != `tag "latest" is not a number: a numerical policy needs filterTags to keep (or extract) numbers only` {
		t.Errorf("err %v", err)
	}
}

func TestExtractCollisionsKeepTheLaterTag(t *testing.T) {
	f, _ := NewFilter(`^(?P<v>[0-9]+)-`, "$v")
	p, _ := NewNumerical("")
	if got, _ := Select(p, f, []string{"5-a", "3-b", "5-c"}); got != "5-c" {
		t.Errorf("got %q", got)
	}
}

func TestInvalidOrderAndPatternAreErrors(t *testing.T) {
	if _, err := NewAlphabetical("up"); err == nil || err.Error() != `order "up" is invalid: want asc or desc` {
		t.Errorf("order: %v", err)
	}
	if _, err := NewFilter("(", ""); err == nil || err.Error() != "filterTags.pattern \"(\" is not a regular expression: error parsing regexp: missing closing ): `(`" {
		t.Errorf("pattern: %v", err)
	}
}

func TestEmptyCandidatesAreFluxError(t *testing.T) {
	f, _ := NewFilter(`^nomatch$`, "")
	for _, p := range []Policer{&Alphabetical{Order: OrderAsc}, &Numerical{Order: OrderAsc}} {
		if _, err := Select(p, f, builds); !errors.Is(err, ErrNoVersion) {
			t.Errorf("%T: %v", p, err)
		}
	}
}

func TestMutableTags(t *testing.T) {
	for tag, want := range map[string]bool{
		"latest": true, "LATEST": true, "alpine-latest": true, "stable": true, "main": true,
		"1.2.3": false, "main-abc123-1700000000": false, "1700000000": false, "latest-1.2.3": true, "v2": false,
	} {
		if IsMutable(tag) != want {
			t.Errorf("IsMutable(%q) = %t", tag, !want)
		}
	}
}
