package faultpoint

import (
	"maps"
	"os"
	"sync"
	"testing"
)

func TestParseReadsPointsAndCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]int
	}{
		{"", map[string]int{}},
		{"kustomize-after-apply", map[string]int{"kustomize-after-apply": 1}},
		{"a:3, b", map[string]int{"a": 3, "b": 1}},
		{"a:0,b:x,c:2", map[string]int{"c": 2}},
	} {
		if got := parse(tc.in); !maps.Equal(got, tc.want) {
			t.Errorf("parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestHitExitsAtTheNthPassageOnly(t *testing.T) {
	var exits []int
	exit = func(code int) { exits = append(exits, code) }
	t.Cleanup(func() { exit = os.Exit })
	t.Setenv(EnvVar, "p:3")
	once = sync.Once{}
	for range 2 {
		Hit("p")
		Hit("other")
	}
	if len(exits) != 0 {
		t.Fatalf("exited before the third passage: %v", exits)
	}
	Hit("p")
	if len(exits) != 1 || exits[0] != ExitCode {
		t.Fatalf("exits = %v, want one exit with %d", exits, ExitCode)
	}
	Hit("p")
	if len(exits) != 1 {
		t.Fatalf("exited again after the third passage: %v", exits)
	}
}
