package registry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hostState is what the Client keeps per registry host, shared by every
// repository on it: the 429 back-off and request counters.
type hostState struct {
	mu       sync.Mutex
	until    time.Time // no request before
	backoff  time.Duration
	failures int // consecutive 429 answers
	stats    HostStats
}

// HostStats counts a registry host's requests since the Client started.
type HostStats struct {
	// Requests is every request sent (pings, tokens, tag lists, manifests).
	Requests int
	// TagListRequests is the tags/list pages requested.
	TagListRequests int
	// NotModified is the tags/list pages answered 304 (reused).
	NotModified int
	// RateLimited is the 429 answers.
	RateLimited int
}

// cachedPage is a tags/list page kept with its ETag, to send
// If-None-Match and reuse the body on 304.
type cachedPage struct {
	etag string
	body []byte
	link string
}

// RateLimitedError is returned for a request to a registry host that
// answered 429 Too Many Requests: from that answer until Until every
// request to the host fails with it at once, without reaching the network.
// Its message names the back-off's length, not its end, so that it stays
// the same while the back-off lasts.
type RateLimitedError struct {
	Host    string
	Until   time.Time
	Backoff time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("registry %s answered 429 Too Many Requests: no request to it for %s", e.Host, e.Backoff)
}

// tooLargeError is a scan's tags/list pages over the Client's byte bound.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("tag list response larger than %d bytes", e.limit)
}

// transport is the innermost round tripper of every registry request of a
// Client: ggcr's retry and authentication layers wrap it. One serves one
// scan: read counts the bytes of the tags/list pages it returned, which
// the Client's byte bound limits in all (a registry padding many small
// pages would otherwise pass a per-page bound page after page).
type hostTransport struct {
	c    *Client
	base http.RoundTripper
	read atomic.Int64
}

func isTagList(req *http.Request) bool {
	return req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/tags/list")
}

func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := t.c.host(req.URL.Host)
	now := t.c.now()
	st.mu.Lock()
	if now.Before(st.until) {
		e := &RateLimitedError{Host: req.URL.Host, Until: st.until, Backoff: st.backoff}
		st.mu.Unlock()
		return nil, e
	}
	st.stats.Requests++
	tags := isTagList(req)
	if tags {
		st.stats.TagListRequests++
	}
	st.mu.Unlock()

	key := req.URL.String()
	cached, hasCached := t.c.cached(key)
	if tags && hasCached {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		drain(resp)
		return nil, t.c.rateLimited(st, req.URL.Host, resp.Header.Get("Retry-After"))
	}
	st.mu.Lock()
	st.failures = 0
	st.mu.Unlock()
	if resp.StatusCode >= 400 {
		// go-containerregistry reads an error answer's body up to 64 KiB
		// and past that fails with "body exceeds 65536 byte limit",
		// losing the status (a proxy's 502 page): give it the start.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, errorBodyBytes), resp.Body}
	}
	if !tags {
		return resp, nil
	}
	if resp.StatusCode == http.StatusNotModified && hasCached {
		drain(resp)
		st.mu.Lock()
		st.stats.NotModified++
		st.mu.Unlock()
		if t.read.Add(int64(len(cached.body))) > t.c.maxBytes() {
			return nil, &tooLargeError{limit: t.c.maxBytes()}
		}
		return cachedResponse(req, resp, cached), nil
	}
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	return t.readTagPage(key, resp)
}

// readTagPage reads a 200 tags/list page within what is left of the scan's
// byte bound and keeps it when it carries an ETag.
func (t *hostTransport) readTagPage(key string, resp *http.Response) (*http.Response, error) {
	limit := t.c.maxBytes() - t.read.Load()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max(limit, 0)+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, &tooLargeError{limit: t.c.maxBytes()}
	}
	t.read.Add(int64(len(body)))
	if etag := resp.Header.Get("ETag"); etag != "" {
		t.c.store(key, cachedPage{etag: etag, body: body, link: resp.Header.Get("Link")})
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

func cachedResponse(req *http.Request, resp *http.Response, p cachedPage) *http.Response {
	h := resp.Header.Clone()
	h.Set("Content-Type", "application/json")
	h.Del("Link")
	if p.link != "" {
		h.Set("Link", p.link)
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto,
		ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor, Header: h,
		Body: io.NopCloser(bytes.NewReader(p.body)), ContentLength: int64(len(p.body)), Request: req,
	}
}

// errorBodyBytes is how much of an error answer's body is read.
const errorBodyBytes = 32 << 10

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// rateLimited records a 429 of host: the back-off is the answer's
// Retry-After (seconds or an HTTP date) when given, else MinBackoff doubled
// per consecutive 429, both capped at MaxBackoff.
func (c *Client) rateLimited(st *hostState, host, retryAfter string) error {
	now := c.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.failures++
	st.stats.RateLimited++
	d := c.MinBackoff << min(st.failures-1, 20)
	if s, err := strconv.Atoi(strings.TrimSpace(retryAfter)); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if at, err := http.ParseTime(retryAfter); err == nil {
		d = at.Sub(now)
	}
	d = min(max(d, c.MinBackoff), c.MaxBackoff)
	st.until, st.backoff = now.Add(d), d
	return &RateLimitedError{Host: host, Until: st.until, Backoff: d}
}
