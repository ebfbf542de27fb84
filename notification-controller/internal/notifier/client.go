package notifier

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/eddyops/eddy/pkg/httpretry"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/hashicorp/go-retryablehttp"
)

// Retry is the back-off of failed deliveries: up to Max retries, waiting
// Min, 2·Min, … capped at Cap. Flux compatible defaults: 4 retries, 2s–30s
// (go-retryablehttp as notification-controller configures it).
type Retry struct {
	Max      int
	Min, Cap time.Duration
}

// DefaultRetry is Flux's retry policy.
var DefaultRetry = Retry{Max: 4, Min: 2 * time.Second, Cap: 30 * time.Second}

// Client posts payloads with retries (go-retryablehttp's default policy,
// as Flux: network errors, 429 and 5xx but 501 are retried; other answers
// are final). One Client, and so one transport and its connection pool,
// serves every delivery of one Provider; it is safe for concurrent use.
type Client struct {
	http *retryablehttp.Client
}

// NewClient returns a Client with retry policy r over transport t (nil:
// a clone of http.DefaultTransport, which honours proxy settings).
func NewClient(r Retry, t http.RoundTripper) *Client {
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &Client{http: httpretry.New(&http.Client{Transport: t}, r.Max, r.Min, r.Cap, checkRetry)}
}

// attempts records a delivery's attempts, so that one cut short by its
// context still says what failed before.
type attempts struct {
	n    int
	last error
}

type attemptsKey struct{}

func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if a, ok := ctx.Value(attemptsKey{}).(*attempts); ok {
		a.n++
		switch {
		case err != nil:
			a.last = fmt.Errorf("sending: %w", redact.URLError(err))
		case resp != nil:
			a.last = &StatusError{Code: resp.StatusCode}
		}
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// CloseIdleConnections closes the transport's idle connections, for a
// Client no longer used.
func (c *Client) CloseIdleConnections() { c.http.HTTPClient.CloseIdleConnections() }

// StatusError is a final non-2xx answer.
type StatusError struct {
	Code int
	// Body is the start of the answer, at most 256 characters.
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("answered %d", e.Code)
	}
	return fmt.Sprintf("answered %d: %s", e.Code, e.Body)
}

// PostJSON posts body to address with the given headers and returns the
// answer's body; see Send.
func (c *Client) PostJSON(ctx context.Context, address string, body []byte, headers map[string]string) ([]byte, error) {
	return c.Send(ctx, Request{URL: address, Body: body, Headers: headers})
}
