package httpretry_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/httpretry"
	"github.com/hashicorp/go-retryablehttp"
)

// TestRetryErrorsAnd5xx: a 5xx is tried 1+retries times and the last
// answer comes back as a single Do's would; a 4xx is final at once.
func TestRetryErrorsAnd5xx(t *testing.T) {
	for _, c := range []struct {
		code, hits int
	}{{http.StatusServiceUnavailable, 3}, {http.StatusNotImplemented, 3}, {http.StatusTooManyRequests, 1}, {http.StatusNotFound, 1}, {http.StatusOK, 1}} {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(c.code)
		}))
		rc := httpretry.New(nil, 2, time.Millisecond, 2*time.Millisecond, httpretry.RetryErrorsAnd5xx)
		req, _ := retryablehttp.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := rc.Do(req)
		if err != nil {
			t.Fatalf("%d: %v", c.code, err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code || int(hits.Load()) != c.hits {
			t.Errorf("answer %d: got %d after %d requests, want %d requests", c.code, resp.StatusCode, hits.Load(), c.hits)
		}
		srv.Close()
	}
}
