package release

import (
	"fmt"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

func versions(h []helmv2.Snapshot) string {
	var v []string
	for _, s := range h {
		v = append(v, fmt.Sprintf("v%d %s", s.Version, s.Status))
	}
	return fmt.Sprint(v)
}

// unordered is a history written out of order (by hand, or by another
// controller): v3 failed, v2 superseded, v1 superseded, v4 deployed.
func unordered() []helmv2.Snapshot {
	return []helmv2.Snapshot{
		{Name: "app", Version: 3, Status: helmrelease.StatusFailed.String()},
		{Name: "app", Version: 2, Status: helmrelease.StatusSuperseded.String()},
		{Name: "app", Version: 1, Status: helmrelease.StatusSuperseded.String()},
		{Name: "app", Version: 4, Status: helmrelease.StatusDeployed.String()},
	}
}

// TestReadingHistoryLeavesItsOrder: Latest and Previous find the newest
// snapshots of a history out of order without reordering it, and Truncate
// and Limit return a new history instead of reordering theirs.
func TestReadingHistoryLeavesItsOrder(t *testing.T) {
	h := unordered()
	want := versions(h)
	if got := Latest(h); got == nil || got.Version != 4 {
		t.Errorf("Latest = %v, want v4", got)
	}
	if got := Previous(h, false); got == nil || got.Version != 2 {
		t.Errorf("Previous = %v, want v2", got)
	}
	if got := versions(Truncate(h, false)); got != "[v4 deployed v3 failed v2 superseded]" {
		t.Errorf("Truncate = %s", got)
	}
	if got := versions(Limit(h)); got != "[v4 deployed v3 failed v2 superseded v1 superseded]" {
		t.Errorf("Limit = %s", got)
	}
	if got := versions(h); got != want {
		t.Errorf("history reordered to %s, was %s", got, want)
	}
	if Latest(nil) != nil || Previous(nil, false) != nil {
		t.Error("an empty history has a latest or previous snapshot")
	}
}

// TestPreviousSkipsFailedTests: a snapshot whose test failed is no target
// unless test failures are ignored.
func TestPreviousSkipsFailedTests(t *testing.T) {
	h := unordered()
	h[1].TestHooks = &map[string]*helmv2.TestHookStatus{"t": {Phase: helmrelease.HookPhaseFailed.String()}}
	if got := Previous(h, false); got == nil || got.Version != 1 {
		t.Errorf("Previous = %v, want v1", got)
	}
	if got := Previous(h, true); got == nil || got.Version != 2 {
		t.Errorf("Previous ignoring tests = %v, want v2", got)
	}
}

// TestLimitKeepsNewestFive: a history longer than DefaultMaxHistory is cut
// to its newest five snapshots.
func TestLimitKeepsNewestFive(t *testing.T) {
	var h []helmv2.Snapshot
	for v := 1; v <= 7; v++ {
		h = append(h, helmv2.Snapshot{Name: "app", Version: v, Status: helmrelease.StatusFailed.String()})
	}
	if got := versions(Truncate(h, false)); got != "[v7 failed v6 failed v5 failed v4 failed v3 failed]" {
		t.Errorf("Truncate = %s", got)
	}
	if got := Limit(h); len(got) != DefaultMaxHistory || got[0].Version != 7 {
		t.Errorf("Limit = %s", versions(got))
	}
}

// TestRecordAddsNewestAndReplacesOthers: the newest observed release
// becomes the first snapshot with the action; an older one observed again
// replaces its snapshot, keeping its action, test hooks and OCI digest;
// the history passed in is left as it was.
func TestRecordAddsNewestAndReplacesOthers(t *testing.T) {
	hooks := &map[string]*helmv2.TestHookStatus{}
	h := []helmv2.Snapshot{{Name: "app", Namespace: "apps", Version: 1, Status: "deployed", Action: "install",
		OCIDigest: "sha256:old", TestHooks: hooks}}
	var observed []*Observed
	observe := ObserveInto(&observed, "")
	rel := func(v int, s helmrelease.Status) *helmrelease.Release {
		return &helmrelease.Release{Name: "app", Namespace: "apps", Version: v, Info: &helmrelease.Info{Status: s}}
	}
	observe(rel(2, helmrelease.StatusPendingUpgrade))
	observe(rel(1, helmrelease.StatusSuperseded))
	observe(rel(2, helmrelease.StatusDeployed))
	if len(observed) != 2 || Newest(observed).Snapshot.Status != "deployed" {
		t.Fatalf("observed %d releases, newest %+v", len(observed), Newest(observed))
	}
	got := Record(h, observed, "upgrade", "sha256:new")
	if versions(got) != "[v2 deployed v1 superseded]" {
		t.Fatalf("history %s", versions(got))
	}
	if got[0].Action != "upgrade" || got[0].OCIDigest != "sha256:new" || got[0].Digest != Digest(observed[0].Release, "sha256:new") {
		t.Errorf("new snapshot %+v", got[0])
	}
	if got[1].Action != "install" || got[1].OCIDigest != "sha256:old" || got[1].TestHooks != hooks {
		t.Errorf("replaced snapshot %+v", got[1])
	}
	if h[0].Status != "deployed" || len(h) != 1 {
		t.Errorf("the history passed in changed: %s", versions(h))
	}
	if versions(Record(h, nil, "upgrade", "")) != versions(h) {
		t.Error("recording nothing changed the history")
	}
}
