// Package registry reads container registries for image-reflector-controller
// with go-containerregistry: a repository's tags (tags/list, following the
// registry's pagination), a tag's digest (HEAD manifest), with an
// ImageRepository's auth, TLS, proxy, insecure and timeout settings.
//
// One Client serves the whole process and keeps per registry host what
// every repository on that host shares: a back-off after a 429 answer
// (every repository on the host waits it out, no request is sent) and the
// last tags/list pages with their ETag, so that a scan sends If-None-Match
// and reuses the page on 304. Few registries send an ETag on tags/list
// (distribution/distribution and ggcr's pkg/registry do not); those that
// do save the body, the others cost what a plain scan costs.
//
// Errors are *Error: stable (no temporary paths, no request IDs) and free
// of secrets (no URL userinfo, no credential from the keychain or the proxy).
package registry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// DefaultMaxTags is Client.MaxTags's default: a scan that finds more tags
// fails (library/node on Docker Hub had 9,036 in 2026).
const DefaultMaxTags = 20000

// maxTagBytes bounds one tag in a tags/list page: 128 characters (the OCI
// distribution spec's tag limit) and JSON quoting.
const maxTagBytes = 132

// validTag is the OCI distribution spec's tag grammar. A tags/list name
// that is not a tag (a megabyte of text, a space, a slash) is left out of
// the scan: no client could pull it, no marker could be written with it,
// and a dozen long ones made the ImageRepository's status too large for
// the API server (its status then never updated).
var validTag = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// Client reaches registries; safe for concurrent use. Create it with
// NewClient.
type Client struct {
	// MaxTags bounds a scan's tag count (before exclusion).
	MaxTags int
	// MinBackoff and MaxBackoff bound the back-off after a 429 (doubling
	// from MinBackoff per consecutive 429 unless Retry-After says).
	MinBackoff, MaxBackoff time.Duration
	// DialContext, if set, dials every registry connection (tests: a name
	// that is not loopback, so ggcr speaks HTTPS to it).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// UserAgent is sent with every request.
	UserAgent string

	now   func() time.Time
	mu    sync.Mutex
	hosts map[string]*hostState
	pages map[string]cachedPage
	// cachedBytes is the bodies' size in pages, at most maxCachedBytes.
	cachedBytes int
}

// maxCachedBytes bounds the ETag page cache: pages keyed by URL (a
// registry may name a new one every scan) would otherwise pile up for the
// life of the process. Over it, the cache starts again empty: it only
// saves bytes on the wire.
const maxCachedBytes = 128 << 20

// NewClient returns a Client with DefaultMaxTags and a 429 back-off of 5 s
// to 10 min.
func NewClient() *Client {
	return &Client{MaxTags: DefaultMaxTags, MinBackoff: 5 * time.Second, MaxBackoff: 10 * time.Minute,
		UserAgent: "eddy-image-reflector-controller", now: time.Now,
		hosts: map[string]*hostState{}, pages: map[string]cachedPage{}}
}

func (c *Client) host(h string) *hostState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.hosts[h]
	if !ok {
		st = &hostState{}
		c.hosts[h] = st
	}
	return st
}

func (c *Client) cached(key string) (cachedPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[key]
	return p, ok
}

func (c *Client) store(key string, p cachedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cachedBytes -= len(c.pages[key].body)
	if c.cachedBytes+len(p.body) > maxCachedBytes {
		c.pages, c.cachedBytes = map[string]cachedPage{}, 0
	}
	c.pages[key] = p
	c.cachedBytes += len(p.body)
}

func (c *Client) maxBytes() int64 { return int64(c.MaxTags)*maxTagBytes + 64<<10 }

// Stats returns the counters of a registry host (host:port as in the image
// name, e.g. "ghcr.io").
func (c *Client) Stats(host string) HostStats {
	st := c.host(host)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stats
}

// BackoffUntil returns when the back-off of host ends; zero if none.
func (c *Client) BackoffUntil(host string) time.Time {
	st := c.host(host)
	st.mu.Lock()
	defer st.mu.Unlock()
	if c.now().Before(st.until) {
		return st.until
	}
	return time.Time{}
}

// remoteOptions are ggcr's options for one call with o.
func (c *Client) remoteOptions(ctx context.Context, o Options) []remote.Option {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if o.TLS != nil {
		base.TLSClientConfig = o.TLS.Clone()
	}
	if o.Proxy != nil {
		base.Proxy = http.ProxyURL(o.Proxy)
	}
	if c.DialContext != nil {
		base.DialContext = c.DialContext
	}
	var kc authn.Keychain = authn.NewMultiKeychain()
	if o.Keychain != nil {
		kc = o.Keychain
	}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(&hostTransport{c: c, base: base}),
		remote.WithAuthFromKeychain(kc),
		remote.WithUserAgent(c.UserAgent),
		// Flakes (5xx, resets) are retried by ggcr; a 429 is not: the
		// host's back-off decides.
		remote.WithRetryStatusCodes(http.StatusRequestTimeout, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout),
	}
}

// withTimeout applies o.Timeout to ctx.
func withTimeout(ctx context.Context, o Options) (context.Context, context.CancelFunc) {
	if o.Timeout > 0 {
		return context.WithTimeout(ctx, o.Timeout)
	}
	return context.WithCancel(ctx)
}

// Result is a scan's outcome.
type Result struct {
	// Tags are the repository's tags in the registry's order (all of them,
	// before any exclusion; names that are not OCI tags left out).
	Tags []string
	// NotModified is true when every tags/list page was answered 304 and
	// reused.
	NotModified bool
}

// ListTags lists the tags of image (a repository, as ParseImage takes it).
// Errors are *Error; more than MaxTags tags is ErrTooManyTags.
func (c *Client) ListTags(ctx context.Context, image string, o Options) (Result, error) {
	repo, err := ParseImage(image, o.Insecure)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := withTimeout(ctx, o)
	defer cancel()
	fail := func(err error) (Result, error) { return Result{}, c.wrap(ctx, OpList, repo.Name(), o, err) }
	before := c.Stats(repo.RegistryStr())
	lister, err := c.lister(ctx, repo, o, 0)
	if pageSizeRefused(err) {
		// ggcr asks for 1000 tags a page; Quay and distribution's
		// tags.maxtags refuse more than they allow.
		lister, err = c.lister(ctx, repo, o, smallPageSize)
	}
	if err != nil {
		return fail(err)
	}
	var tags []string
	seen := map[string]bool{}
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return fail(err)
		}
		for _, t := range page.Tags {
			if validTag.MatchString(t) {
				tags = append(tags, t)
			}
		}
		if len(tags) > c.MaxTags {
			return fail(&tooManyTags{max: c.MaxTags})
		}
		if page.Next != "" && seen[page.Next] {
			return fail(errPaginationLoop)
		}
		seen[page.Next] = true
	}
	after := c.Stats(repo.RegistryStr())
	pages := after.TagListRequests - before.TagListRequests
	reused := after.NotModified - before.NotModified
	return Result{Tags: tags, NotModified: pages > 0 && pages == reused}, nil
}

// smallPageSize is the tags/list page size asked again when a registry
// refuses ggcr's default (1000).
const smallPageSize = 100

// lister starts listing repo's tags (its first page), pageSize tags a page
// (0: ggcr's default).
func (c *Client) lister(ctx context.Context, repo name.Repository, o Options, pageSize int) (*remote.Lister, error) {
	opts := c.remoteOptions(ctx, o)
	if pageSize > 0 {
		opts = append(opts, remote.WithPageSize(pageSize))
	}
	p, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	return p.Lister(ctx, repo)
}

// pageSizeRefused tells whether err is a registry refusing the page size
// asked: distribution's PAGINATION_NUMBER_INVALID, Quay's
// TOO_MANY_TAGS_REQUESTED.
func pageSizeRefused(err error) bool {
	var te *transport.Error
	if err == nil || !errors.As(err, &te) || te.StatusCode != http.StatusBadRequest {
		return false
	}
	for _, d := range te.Errors {
		if d.Code == "PAGINATION_NUMBER_INVALID" || d.Code == "TOO_MANY_TAGS_REQUESTED" {
			return true
		}
	}
	return false
}

// Digest returns the digest of image:tag's manifest (a HEAD request, as
// Flux's digest reflection), e.g. "sha256:…".
func (c *Client) Digest(ctx context.Context, image, tag string, o Options) (string, error) {
	repo, err := ParseImage(image, o.Insecure)
	if err != nil {
		return "", err
	}
	ctx, cancel := withTimeout(ctx, o)
	defer cancel()
	ref := repo.Tag(tag)
	desc, err := remote.Head(ref, c.remoteOptions(ctx, o)...)
	if err != nil {
		return "", c.wrap(ctx, OpDigest, ref.Name(), o, err)
	}
	return desc.Digest.String(), nil
}

// CanonicalName returns the canonical repository name of image, as Flux's
// status.canonicalImageName ("podinfo" → "index.docker.io/library/podinfo").
func CanonicalName(image string, insecure bool) (string, error) {
	repo, err := ParseImage(image, insecure)
	if err != nil {
		return "", err
	}
	return repo.Name(), nil
}

// Host returns the registry host of image ("index.docker.io" for Docker
// Hub), the key of the per-host back-off and stats.
func Host(image string) string {
	repo, err := name.NewRepository(image)
	if err != nil {
		return ""
	}
	return repo.RegistryStr()
}
