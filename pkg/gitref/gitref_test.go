package gitref

import (
	"errors"
	"testing"
)

func TestHighestSatisfyingVersionWinsAndNonVersionsAreSkipped(t *testing.T) {
	tags := []string{"latest", "1.0.0", "v1.10.0", "1.9.0", "2.0.0", "1.11.0-rc.1", "release-1.12.0"}
	for constraint, want := range map[string]string{
		"^1.0.0":             "v1.10.0",
		">=1.0.0-0 <2.0.0-0": "1.11.0-rc.1",
		"*":                  "2.0.0",
		"~1.9":               "1.9.0",
	} {
		got, err := HighestSemverTag(constraint, tags)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v, want %q", constraint, got, err, want)
		}
	}
}

func TestEqualVersionsResolveToTheGreatestTagNameWhateverTheOrder(t *testing.T) {
	for _, tags := range [][]string{{"1.2.0", "v1.2.0", "1.2.0+b"}, {"1.2.0+b", "v1.2.0", "1.2.0"}} {
		if got, err := HighestSemverTag("1.2.x", tags); err != nil || got != "v1.2.0" {
			t.Errorf("%v: %q, %v, want v1.2.0", tags, got, err)
		}
	}
}

func TestConstraintAndNoMatchErrorsAreFluxs(t *testing.T) {
	_, err := HighestSemverTag("not a range", []string{"1.0.0"})
	var ce *ConstraintError
	if !errors.As(err, &ce) || err.Error() != `semver parse error: improper constraint: "not a range"` {
		t.Errorf("bad constraint: %v", err)
	}
	_, err = HighestSemverTag(">=3.0.0", []string{"1.0.0", "main"})
	if !errors.Is(err, ErrNoSemverMatch) || err.Error() != "no match found for semver: >=3.0.0" {
		t.Errorf("no match: %v", err)
	}
}
