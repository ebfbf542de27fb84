package controller

import (
	"container/list"
	"context"
	"io"
	"sync"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
)

// MaxArtifactBytes bounds the file content of one artifact held in memory:
// 100 MiB, Flux's limit on an extracted artifact. With --concurrent reads in
// flight this keeps a compressed "zip bomb" from exhausting the memory limit.
const MaxArtifactBytes = 100 << 20

// DefaultArtifactCacheBytes bounds the artifact cache: 128 MiB of file
// content (the most recently used artifact is kept whatever its size).
const DefaultArtifactCacheBytes = 128 << 20

// artifactCache keeps the file trees of recently used artifacts by digest,
// so the Kustomizations of one source revision download, verify and read
// its archive once instead of once per reconcile. Concurrent requests for a
// digest share one download. Failures are not cached.
type artifactCache struct {
	fetcher  *artifact.Fetcher
	maxBytes int64

	mu      sync.Mutex
	entries map[string]*cacheEntry
	lru     *list.List // of *cacheEntry, most recently used first
	bytes   int64
}

type cacheEntry struct {
	digest string
	done   chan struct{}
	tree   *kustomize.Tree
	err    error
	elem   *list.Element
}

func newArtifactCache(f *artifact.Fetcher, maxBytes int64) *artifactCache {
	if maxBytes <= 0 {
		maxBytes = DefaultArtifactCacheBytes
	}
	return &artifactCache{fetcher: f, maxBytes: maxBytes, entries: map[string]*cacheEntry{}, lru: list.New()}
}

// Get returns the tree of owner's artifact art, fetching it (see
// artifact.Fetcher.FetchArtifact for the errors) unless cached. The
// signature is checked first, cached or not: the cache is keyed by digest,
// and a digest copied into a forged status must not read another source's
// tree from it.
//
// An ExternalArtifact's artifact is not signed (another controller
// publishes it): its digest is required and checked as it downloads, and
// its cache key includes owner, so a digest copied from another source
// never reads that source's cached tree.
func (c *artifactCache) Get(ctx context.Context, owner artifact.Owner, art *meta.Artifact) (*kustomize.Tree, error) {
	external := owner.Kind == sourcev1.ExternalArtifactKind
	fetch := c.fetcher.FetchArtifact
	digest := art.Digest
	if external {
		fetch, digest = c.fetcher.FetchExternal, owner.String()+"@"+art.Digest
	} else if err := artifact.VerifySignature(ctx, c.fetcher.Keys, owner, art); err != nil {
		return nil, err
	}
	c.mu.Lock()
	e, ok := c.entries[digest]
	if ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		select {
		case <-e.done:
			if e.err == nil {
				return e.tree, nil
			}
			// The download this call waited for failed: try again.
			return c.Get(ctx, owner, art)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e = &cacheEntry{digest: digest, done: make(chan struct{})}
	c.entries[digest] = e
	c.mu.Unlock()

	e.err = fetch(ctx, owner, art, func(r io.Reader, lim artifact.Limits) error {
		lim.MaxBytes = min(lim.MaxBytes, MaxArtifactBytes)
		t, err := kustomize.ReadTree(r, lim)
		e.tree = t
		return err
	})

	c.mu.Lock()
	defer c.mu.Unlock()
	if e.err != nil {
		delete(c.entries, digest)
		close(e.done)
		return nil, e.err
	}
	e.elem = c.lru.PushFront(e)
	c.bytes += e.tree.Size()
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, old.digest)
		c.bytes -= old.tree.Size()
	}
	close(e.done)
	return e.tree, nil
}
