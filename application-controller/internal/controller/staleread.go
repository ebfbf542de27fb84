package controller

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// staleCopies remembers, per Application, the resourceVersions that the
// controller's own last status write superseded. For a moment after a
// write the cache may still serve the copy it replaced; a pass working
// from that copy would redo a step (an apply, a prune) and then lose the
// record of it to the conflict of its own write, so such a copy is read
// again from the API server instead.
type staleCopies struct {
	mu  sync.Mutex
	rvs map[types.NamespacedName][]string
}

// superseded records that key's copies at rvs are older than the write
// just made.
func (s *staleCopies) superseded(key types.NamespacedName, rvs ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rvs == nil {
		s.rvs = map[types.NamespacedName][]string{}
	}
	s.rvs[key] = rvs
}

// stale reports whether a copy of key at rv is one a write of the
// controller superseded; a newer copy clears what was recorded.
func (s *staleCopies) stale(key types.NamespacedName, rv string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.rvs[key], rv) {
		return true
	}
	delete(s.rvs, key)
	return false
}

// forget drops key (the Application is gone).
func (s *staleCopies) forget(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rvs, key)
}
