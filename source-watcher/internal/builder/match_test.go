package builder

import (
	"strings"
	"testing"
)

// TestMatchDoubleStar: "**" spans any number of segments, none included,
// and a pattern of many "**" against a deep path ends (remembered
// backtracking, not exponential) with the right answer.
func TestMatchDoubleStar(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"**", "a/b/c", true},
		{"a/**/c", "a/c", true},
		{"a/**/c", "a/b/x/c", true},
		{"a/**/c", "a/b/x/d", false},
		{"**/*.yaml", "deploy/app.yaml", true},
		{"**/**/*.yaml", "app.yaml", true},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/x/c", false},
		{"*.md", "docs/a.md", false},
	} {
		if got := match(c.pattern, c.name); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	deep := strings.Repeat("a/", 60) + "b"
	if match(strings.Repeat("**/a/", 30)+"z", deep) {
		t.Error("30 '**' segments matched a path without z")
	}
	if !match(strings.Repeat("**/a/", 30)+"b", deep) {
		t.Error("30 '**' segments did not match")
	}
}
