package release

import (
	"slices"
	"sort"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// DefaultMaxHistory is spec.maxHistory's default and the most snapshots
// status.history keeps. Flux compatible.
const DefaultMaxHistory = 5

// The functions below read a status.history without changing it; those
// that return a history return a new slice, newest first, for the caller
// to store.

// Sort puts history in order newest first (highest version first, equal
// versions in their order). status.history is kept in this order.
func Sort(history []helmv2.Snapshot) {
	sort.SliceStable(history, func(i, j int) bool { return history[i].Version > history[j].Version })
}

// sorted is a copy of history, newest first.
func sorted(history []helmv2.Snapshot) []helmv2.Snapshot {
	h := slices.Clone(history)
	Sort(h)
	return h
}

// Latest points at the newest snapshot of history (the highest version,
// the first of equal ones), nil when it is empty. history is not reordered.
func Latest(history []helmv2.Snapshot) *helmv2.Snapshot {
	if len(history) == 0 {
		return nil
	}
	latest := 0
	for i := range history {
		if history[i].Version > history[latest].Version {
			latest = i
		}
	}
	return &history[latest]
}

// newestFirst is the indexes of history, newest snapshot first.
func newestFirst(history []helmv2.Snapshot) []int {
	idx := make([]int, len(history))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return history[idx[a]].Version > history[idx[b]].Version })
	return idx
}

// deployedTarget reports whether s is a release to go back to: deployed or
// superseded, and without a failed test unless ignoreTests.
func deployedTarget(s *helmv2.Snapshot, ignoreTests bool) bool {
	if s.Status != helmrelease.StatusDeployed.String() && s.Status != helmrelease.StatusSuperseded.String() {
		return false
	}
	return ignoreTests || !HasFailedTest(s)
}

// Previous points at the newest deployed or superseded snapshot of history
// after the latest, skipping one with a failed test unless ignoreTests;
// nil when there is none. Flux compatible.
func Previous(history []helmv2.Snapshot, ignoreTests bool) *helmv2.Snapshot {
	idx := newestFirst(history)
	for n := 1; n < len(idx); n++ {
		if s := &history[idx[n]]; deployedTarget(s, ignoreTests) {
			return s
		}
	}
	return nil
}

// Truncate returns history newest first, kept up to the snapshot Previous
// finds, else up to DefaultMaxHistory. Flux compatible.
func Truncate(history []helmv2.Snapshot, ignoreTests bool) []helmv2.Snapshot {
	if len(history) < 2 {
		return history
	}
	h := sorted(history)
	for i := 1; i < len(h); i++ {
		if deployedTarget(&h[i], ignoreTests) {
			return h[:i+1]
		}
	}
	if len(h) > DefaultMaxHistory {
		h = h[:DefaultMaxHistory]
	}
	return h
}

// Limit returns history newest first, at most DefaultMaxHistory snapshots.
func Limit(history []helmv2.Snapshot) []helmv2.Snapshot {
	h := sorted(history)
	if len(h) > DefaultMaxHistory {
		h = h[:DefaultMaxHistory]
	}
	return h
}
