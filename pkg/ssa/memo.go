package ssa

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// DefaultUnchangedMemoTTL is how long an entry stands: an object is
// dry-run at least once an hour however often it is reconciled, so what
// its resourceVersion does not show (the applier's RBAC, a new admission
// policy or webhook) is found within the hour.
const DefaultUnchangedMemoTTL = time.Hour

// DefaultUnchangedMemoEntries bounds an UnchangedMemo made with 0 entries:
// 32,768 objects (5,000 Kustomizations of 5 objects and more), about 5 MiB.
const DefaultUnchangedMemoEntries = 1 << 15

// UnchangedMemo remembers, per object, the desired object and the live
// object's uid and resourceVersion of its last plan that found it
// Unchanged (the dry-run equalled the live object), or of its last apply
// (the apply's answer is what a dry-run of the same desired object would
// leave unchanged). A later plan of the same desired object against the
// same live version would find it Unchanged, so it skips the dry-run: an unchanged reconcile costs one read
// per object instead of a read and a dry-run. Any write to the live object
// (drift, another manager, a status update) changes its resourceVersion,
// and any change to the desired object its digest, and the object is
// dry-run again; and so is every object at least once per TTL (see
// DefaultUnchangedMemoTTL), for what the resourceVersion does not show.
// Only built-in kinds are remembered (see memoizable). Beyond Flux, which
// dry-runs every object every time. The memo is in memory only (a restarted controller dry-runs everything
// once) and least-recently-used entries go beyond its bound. Safe for
// concurrent use; a nil *UnchangedMemo remembers nothing.
type UnchangedMemo struct {
	mu      sync.Mutex
	max     int
	ttl     time.Duration
	entries map[string]*list.Element
	lru     *list.List // of *memoEntry, most recently used first
	// refused are the LISTs an identity was refused (Manager.ListLabels),
	// by scope, kind and namespace, with the time: not tried again for a TTL.
	refused map[string]time.Time
}

type memoEntry struct {
	key, uid, resourceVersion string
	desired                   [sha256.Size]byte
	at                        time.Time // of the dry-run that found it unchanged, or of the apply
}

// NewUnchangedMemo returns a memo of at most entries objects (0:
// DefaultUnchangedMemoEntries), each standing for ttl after the dry-run
// that found it unchanged (0: DefaultUnchangedMemoTTL). A negative ttl
// turns the memo off: every object is dry-run every time, as Flux does.
func NewUnchangedMemo(entries int, ttl time.Duration) *UnchangedMemo {
	if ttl < 0 {
		return nil
	}
	if entries <= 0 {
		entries = DefaultUnchangedMemoEntries
	}
	if ttl == 0 {
		ttl = DefaultUnchangedMemoTTL
	}
	return &UnchangedMemo{max: entries, ttl: ttl, entries: map[string]*list.Element{}, lru: list.New(), refused: map[string]time.Time{}}
}

// memoizable tells whether objects of gvk may skip their dry-run: only the
// API server's built-in kinds, whose schema is fixed by its build. A custom
// resource's schema is its CRD's, which can change while the object and its
// desired state stay the same (a field dropped from the schema fails the
// dry-run of an object that still sets it), so custom resources, and any
// kind an aggregated API serves, are dry-run every time.
func memoizable(gvk schema.GroupVersionKind) bool {
	return clientgoscheme.Scheme.Recognizes(gvk)
}

// desiredDigest is the SHA-256 of the desired object as it would be
// dry-run and of what else decides the plan's outcome (scope: e.g. the
// identity the apply runs as; the ignore rules' paths).
func desiredDigest(u *unstructured.Unstructured, scope string, ignored [][]string) ([sha256.Size]byte, bool) {
	b, err := json.Marshal([]any{u.Object, scope, ignored})
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(b), true
}

// unchanged tells whether key was last planned Unchanged with this desired
// digest against this live version.
func (m *UnchangedMemo) unchanged(key string, live *unstructured.Unstructured, desired [sha256.Size]byte) bool {
	if m == nil || live == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[key]
	if !ok {
		return false
	}
	e := el.Value.(*memoEntry)
	if e.desired != desired || e.uid != string(live.GetUID()) || e.resourceVersion != live.GetResourceVersion() || time.Since(e.at) >= m.ttl {
		return false
	}
	m.lru.MoveToFront(el)
	return true
}

// known tells whether key was last planned (or applied) with this desired
// digest, within the TTL: then reading the live object may spare the
// dry-run.
func (m *UnchangedMemo) known(key string, desired [sha256.Size]byte) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[key]
	if !ok {
		return false
	}
	e := el.Value.(*memoEntry)
	return e.desired == desired && time.Since(e.at) < m.ttl
}

// record remembers key as Unchanged for desired against live.
func (m *UnchangedMemo) record(key string, live *unstructured.Unstructured, desired [sha256.Size]byte) {
	if m == nil || live == nil || live.GetResourceVersion() == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &memoEntry{key: key, uid: string(live.GetUID()), resourceVersion: live.GetResourceVersion(), desired: desired, at: time.Now()}
	if el, ok := m.entries[key]; ok {
		el.Value = e
		m.lru.MoveToFront(el)
		return
	}
	m.entries[key] = m.lru.PushFront(e)
	for m.lru.Len() > m.max {
		last := m.lru.Back()
		m.lru.Remove(last)
		delete(m.entries, last.Value.(*memoEntry).key)
	}
}

// forget drops key: its last plan was not Unchanged.
func (m *UnchangedMemo) forget(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok {
		m.lru.Remove(el)
		delete(m.entries, key)
	}
}

// Len is the number of objects remembered.
func (m *UnchangedMemo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}

// listRefused tells whether a LIST of key was refused within the TTL.
func (m *UnchangedMemo) listRefused(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.refused[key]
	return ok && time.Since(at) < m.ttl
}

// refuseList records that a LIST of key was refused (RBAC: the identity
// may get and patch, not list); the entries are few (one per scope, kind
// and namespace) and those older than the TTL go at each new one.
func (m *UnchangedMemo) refuseList(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, at := range m.refused {
		if time.Since(at) >= m.ttl {
			delete(m.refused, k)
		}
	}
	m.refused[key] = time.Now()
}
