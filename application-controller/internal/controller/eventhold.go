package controller

import "sync"

// eventHold keeps the events of an Application's reconcile until its
// status write succeeded: a reconcile that worked from a stale copy loses
// its write to a conflict and is run again, and its events (a status
// transition seen from the stale copy) must not be recorded twice or
// wrongly. Keyed by namespace/name; controller-runtime never reconciles
// one key twice at once.
type eventHold struct {
	mu   sync.Mutex
	held map[string][]func()
}

// hold starts keeping key's events.
func (h *eventHold) hold(key string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[string][]func(){}
	}
	h.held[key] = []func(){}
}

// keep queues emit when key's events are held; it reports whether it did.
func (h *eventHold) keep(key string, emit func()) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q, ok := h.held[key]
	if ok {
		h.held[key] = append(q, emit)
	}
	return ok
}

// release stops keeping key's events and records them when written is
// true, else drops them.
func (h *eventHold) release(key string, written bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	q := h.held[key]
	delete(h.held, key)
	h.mu.Unlock()
	if written {
		for _, emit := range q {
			emit()
		}
	}
}
