package server

import (
	"sync"
	"time"
)

// dedup remembers event keys for an interval: the first sight of a key
// passes, repeats within the interval do not. Flux compatible in effect
// (one token per key per --rate-limit-interval). At most max keys are
// kept; when full after dropping expired keys it forgets everything, so
// memory stays bounded under a flood of distinct events at the cost of
// letting some repeats through.
type dedup struct {
	mu       sync.Mutex
	seen     map[[32]byte]time.Time
	interval time.Duration
	max      int
}

func newDedup(interval time.Duration, max int) *dedup {
	return &dedup{seen: map[[32]byte]time.Time{}, interval: interval, max: max}
}

// allow reports whether key passes at now, and records it.
func (d *dedup) allow(key [32]byte, now time.Time) bool {
	if d.interval <= 0 {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if exp, ok := d.seen[key]; ok && now.Before(exp) {
		return false
	}
	if len(d.seen) >= d.max {
		for k, exp := range d.seen {
			if !now.Before(exp) {
				delete(d.seen, k)
			}
		}
		if len(d.seen) >= d.max {
			clear(d.seen)
		}
	}
	d.seen[key] = now.Add(d.interval)
	return true
}
