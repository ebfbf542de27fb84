package release

import (
	"strings"
	"testing"
)

// TestShortenNameCutsOver53Characters: names up to 53 characters are kept; longer ones become
// 40 characters, "-" and 12 hex digits of their sha256 (Flux's
// internal/release/name.go, whose test uses these values).
func TestShortenNameCutsOver53Characters(t *testing.T) {
	for in, want := range map[string]string{
		"release-name":          "release-name",
		strings.Repeat("a", 53): strings.Repeat("a", 53),
		"some-front-appended-namespace-release-with-a-name-that-exceeds-53": "some-front-appended-namespace-release-wi-",
	} {
		got := ShortenName(in)
		if len(in) <= 53 && got != want {
			t.Errorf("ShortenName(%q) = %q", in, got)
		}
		if len(in) > 53 && (len(got) != 53 || !strings.HasPrefix(got, want)) {
			t.Errorf("ShortenName(%q) = %q, want %q + 12 hex digits", in, got, want)
		}
	}
}
