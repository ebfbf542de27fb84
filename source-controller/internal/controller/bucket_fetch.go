package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/redact"
	"golang.org/x/sync/errgroup"
)

// This file holds what a Bucket's reconcile does with any provider: the
// object index (key → etag) and its revision, the ignore rules, and the
// download of the indexed objects. The providers (bucket_minio.go) only
// list, read and tell a missing object.

// bucketClient is one provider's client of one reconcile.
type bucketClient interface {
	// exists reports whether the bucket exists.
	exists(ctx context.Context, bucket string) (bool, error)
	// visit calls fn with the key and etag of every object whose key
	// starts with prefix, stopping at fn's first error.
	visit(ctx context.Context, bucket, prefix string, fn func(key, etag string) error) error
	// get writes the object key to w and returns its etag.
	get(ctx context.Context, bucket, key string, w io.Writer) (string, error)
	// notFound reports whether err says the object does not exist.
	notFound(err error) bool
}

// maxBucketFetches bounds the objects downloaded at once. Flux compatible
// (maxConcurrentBucketFetches): enough for thousands of small objects in
// seconds, bounded so the process stays small.
const maxBucketFetches = 100

// bucketIndex is the objects of a bucket an artifact is built of: key →
// etag. It is safe for concurrent use (downloads update it).
type bucketIndex struct {
	mu   sync.Mutex
	etag map[string]string
}

func newBucketIndex() *bucketIndex { return &bucketIndex{etag: map[string]string{}} }

func (i *bucketIndex) set(key, etag string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.etag[key] = etag
}

func (i *bucketIndex) remove(key string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.etag, key)
}

// len is the number of objects indexed.
func (i *bucketIndex) len() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.etag)
}

// entries is a copy of the index.
func (i *bucketIndex) entries() map[string]string {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make(map[string]string, len(i.etag))
	for k, v := range i.etag {
		out[k] = v
	}
	return out
}

// revision is the index's revision: `sha256:<hex>` of the lines
// `<key> <etag>\n` in key order. Flux compatible (internal/index Digester),
// so the same bucket content has the same revision under Flux and Eddy.
func (i *bucketIndex) revision() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	keys := make([]string, 0, len(i.etag))
	for k := range i.etag {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s %s\n", k, i.etag[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// indexBucket builds obj's object index with c: it confirms the bucket
// exists, reads its root .sourceignore object into dir (where it stays, in
// the artifact, as in Flux), and lists the objects under spec.prefix, minus
// directory markers, the .sourceignore object and what it or spec.ignore
// excludes. Flux compatible (fetchEtagIndex): its messages.
func indexBucket(ctx context.Context, c bucketClient, obj *sourcev1.Bucket, dir string) (*bucketIndex, error) {
	name := obj.Spec.BucketName
	ok, err := c.exists(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("failed to confirm existence of '%s' bucket: %s", name, sanitize(err))
	}
	if !ok {
		return nil, fmt.Errorf("bucket '%s' not found", name)
	}
	if err := getObject(ctx, c, name, artifact.IgnoreFile, dir); err != nil && !c.notFound(err) {
		return nil, fmt.Errorf("failed to get Etag for '%s' object: %s", artifact.IgnoreFile, sanitize(err))
	}
	ignore, err := bucketIgnore(dir, obj.Spec.Ignore)
	if err != nil {
		return nil, err
	}
	index := newBucketIndex()
	err = c.visit(ctx, name, obj.Spec.Prefix, func(key, etag string) error {
		if strings.HasSuffix(key, "/") || key == artifact.IgnoreFile || ignore.Match(key, false) {
			return nil
		}
		index.set(key, etag)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("indexation of objects from bucket '%s' failed: listing objects from bucket '%s' failed: %s", name, name, sanitize(err))
	}
	return index, nil
}

// bucketIgnore reads the rules of the bucket's root .sourceignore (in dir,
// if it was there) followed by spec: no VCS or default patterns. Flux
// compatible (a Bucket is filtered by these two only).
func bucketIgnore(dir string, spec *string) (*artifact.Ignore, error) {
	var patterns []string
	data, err := os.ReadFile(filepath.Join(dir, artifact.IgnoreFile))
	switch {
	case err == nil:
		patterns = append(patterns, string(data))
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if spec != nil {
		patterns = append(patterns, *spec)
	}
	return artifact.NewIgnore(strings.Split(strings.Join(patterns, "\n"), "\n")), nil
}

// fetchBucket downloads the indexed objects into dir, at most
// maxBucketFetches at once; an object gone since the listing leaves the
// index, one changed since takes its new etag. Flux compatible
// (fetchIndexFiles): its messages.
func fetchBucket(ctx context.Context, c bucketClient, obj *sourcev1.Bucket, index *bucketIndex, dir string) error {
	name := obj.Spec.BucketName
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxBucketFetches)
	for key, etag := range index.entries() {
		g.Go(func() error {
			got, err := getEtag(gctx, c, name, key, dir)
			switch {
			case err != nil && c.notFound(err):
				index.remove(key)
				return nil
			case err != nil:
				return fmt.Errorf("failed to get '%s' object: %s", key, sanitize(err))
			case got != etag:
				index.set(key, got)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("fetch from bucket '%s' failed: %w", name, err)
	}
	return nil
}

// getObject downloads the object key into dir (getEtag).
func getObject(ctx context.Context, c bucketClient, bucket, key, dir string) error {
	_, err := getEtag(ctx, c, bucket, key, dir)
	return err
}

// getEtag downloads the object key to its path under dir, a key that
// climbs out of dir kept inside it (securejoin, as Flux), and returns its
// etag. A failed download leaves no file.
func getEtag(ctx context.Context, c bucketClient, bucket, key, dir string) (string, error) {
	p, err := securejoin.SecureJoin(dir, key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".download-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	etag, err := c.get(ctx, bucket, key, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return etag, os.Rename(f.Name(), p)
}

// sanitize is the message of a provider's error without credentials
// written in a URL (the providers' errors may quote the request URL).
func sanitize(err error) string {
	return redact.Message(err.Error())
}
