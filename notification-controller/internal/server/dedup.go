package server

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// dedup remembers event keys for an interval: the first sight of a key
// passes, repeats within the interval do not. Flux compatible in effect
// (one token per key per --rate-limit-interval). It is an expiring LRU of
// at most max keys: under a flood of distinct events the least recently
// seen keys go first, so memory stays bounded at the cost of letting some
// old repeats through.
type dedup struct {
	mu   sync.Mutex // makes the look-up and the insert one step
	seen *expirable.LRU[[32]byte, struct{}]
}

// newDedup returns a dedup of interval (0: everything passes) and max keys.
func newDedup(interval time.Duration, max int) *dedup {
	if interval <= 0 {
		return &dedup{}
	}
	return &dedup{seen: expirable.NewLRU[[32]byte, struct{}](max, nil, interval)}
}

// allow reports whether key passes now, and records it.
func (d *dedup) allow(key [32]byte) bool {
	if d.seen == nil {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen.Get(key); ok {
		return false
	}
	d.seen.Add(key, struct{}{})
	return true
}

// len is the number of keys held.
func (d *dedup) len() int {
	if d.seen == nil {
		return 0
	}
	return d.seen.Len()
}
