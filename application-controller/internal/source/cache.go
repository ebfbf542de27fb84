package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
)

// Defaults of Manager.CacheMax and Manager.CacheGrace.
const (
	DefaultCacheMax   = 64
	DefaultCacheGrace = 5 * time.Minute
)

// tmpPrefix names directories being extracted; they are renamed to the
// digest when complete, so a digest directory is always whole.
const tmpPrefix = ".tmp-"

var digestName = regexp.MustCompile(`^[a-z0-9]+:[a-f0-9]{32,128}$`)

// unpack returns the directory under CacheDir holding art's files,
// downloading, verifying and extracting it unless an earlier Ensure did.
// Concurrent calls for one digest share one download. An artifact that
// is gone (404) or changed (digest mismatch) is NotReady: source-controller
// is storing a newer one.
func (m *Manager) unpack(ctx context.Context, kind, name string, art *sourcev1.Artifact) (string, error) {
	if !digestName.MatchString(art.Digest) {
		return "", fmt.Errorf("%s %s: artifact digest %q is not <algorithm>:<hex>", kind, name, art.Digest)
	}
	// Before the cache, which is keyed by digest: a digest copied into a
	// forged status must not reach another source's files.
	owner := artifact.Owner{Kind: kind, Namespace: m.Namespace, Name: name}
	if err := artifact.VerifySignature(ctx, m.fetcher().Keys, owner, art); err != nil {
		return "", err
	}
	dirName := strings.Replace(art.Digest, ":", "-", 1)
	dir := filepath.Join(m.CacheDir, dirName)
	for {
		m.cacheMu.Lock()
		if m.lastUse == nil {
			m.lastUse, m.inflight = map[string]time.Time{}, map[string]*sync.WaitGroup{}
		}
		wg := m.inflight[dirName]
		if wg == nil {
			if _, err := os.Stat(dir); err == nil {
				m.lastUse[dirName] = time.Now()
				m.cacheMu.Unlock()
				return dir, nil
			}
			wg = &sync.WaitGroup{}
			wg.Add(1)
			m.inflight[dirName] = wg
			m.cacheMu.Unlock()
			break
		}
		m.cacheMu.Unlock()
		wg.Wait()
	}
	err := m.extract(ctx, owner, art, dir)

	m.cacheMu.Lock()
	wg := m.inflight[dirName]
	delete(m.inflight, dirName)
	if err == nil {
		m.lastUse[dirName] = time.Now()
		m.prune()
	}
	m.cacheMu.Unlock()
	wg.Done()
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		return "", &NotReady{Kind: kind, Name: name, Message: "artifact not found, waiting for the source to store it"}
	case errors.Is(err, artifact.ErrDigestMismatch):
		return "", &NotReady{Kind: kind, Name: name, Message: "artifact digest changed, waiting for the source to store it"}
	case err != nil:
		return "", err
	}
	return dir, nil
}

// fetcher is Fetcher, or one with no key (refusing every artifact).
func (m *Manager) fetcher() *artifact.Fetcher {
	if m.Fetcher == nil {
		return &artifact.Fetcher{}
	}
	return m.Fetcher
}

// extract fetches owner's artifact art into a temporary directory in
// CacheDir and renames it to dir.
func (m *Manager) extract(ctx context.Context, owner artifact.Owner, art *sourcev1.Artifact, dir string) error {
	if err := os.MkdirAll(m.CacheDir, 0o755); err != nil {
		return fmt.Errorf("creating the artifact cache: %w", err)
	}
	tmp, err := os.MkdirTemp(m.CacheDir, tmpPrefix)
	if err != nil {
		return fmt.Errorf("creating the artifact cache: %w", err)
	}
	extract := func(r io.Reader, lim artifact.Limits) error { return artifact.Extract(r, tmp, lim) }
	if err := m.fetcher().FetchArtifact(ctx, owner, art, extract); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("storing the artifact in the cache: %w", err)
	}
	return nil
}

// prune keeps at most CacheMax artifact directories, removing the least
// recently used ones that were not handed out within CacheGrace, and
// leftover temporary directories older than an hour. Directories found
// on disk from an earlier run count as used at their modification time.
// Called with cacheMu held, after each new extraction (only then can the
// cache grow).
func (m *Manager) prune() {
	entries, err := os.ReadDir(m.CacheDir)
	if err != nil {
		return
	}
	limit, grace := m.CacheMax, m.CacheGrace
	if limit <= 0 {
		limit = DefaultCacheMax
	}
	if grace <= 0 {
		grace = DefaultCacheGrace
	}
	type use struct {
		name string
		at   time.Time
	}
	var uses []use
	now := time.Now()
	for _, e := range entries {
		name := e.Name()
		at, known := m.lastUse[name]
		if !known {
			info, err := e.Info()
			if err != nil {
				continue
			}
			at = info.ModTime()
		}
		if strings.HasPrefix(name, tmpPrefix) {
			if now.Sub(at) > time.Hour {
				os.RemoveAll(filepath.Join(m.CacheDir, name))
			}
			continue
		}
		if m.inflight[name] == nil {
			uses = append(uses, use{name, at})
		}
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].at.After(uses[j].at) })
	for i, u := range uses {
		if i < limit || now.Sub(u.at) < grace {
			continue
		}
		if os.RemoveAll(filepath.Join(m.CacheDir, u.name)) == nil {
			delete(m.lastUse, u.name)
		}
	}
}
