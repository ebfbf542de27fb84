package notifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Retry is the back-off of failed deliveries: up to Max retries, waiting
// Min, 2·Min, … capped at Wait. Flux compatible defaults: 4 retries, 2s–30s
// (go-retryablehttp as notification-controller configures it).
type Retry struct {
	Max      int
	Min, Cap time.Duration
}

// DefaultRetry is Flux's retry policy.
var DefaultRetry = Retry{Max: 4, Min: 2 * time.Second, Cap: 30 * time.Second}

// Client posts payloads with retries. Network errors, 429 and 5xx (but
// 501) are retried; other answers are final.
type Client struct {
	http  *http.Client
	retry Retry
}

// NewClient returns a Client with retry policy r over transport t (nil:
// a clone of http.DefaultTransport, which honours proxy settings).
func NewClient(r Retry, t http.RoundTripper) *Client {
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &Client{http: &http.Client{Transport: t}, retry: r}
}

// StatusError is a final non-2xx answer.
type StatusError struct {
	Code int
	// Body is the start of the answer, at most 256 bytes.
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("answered %d", e.Code)
	}
	return fmt.Sprintf("answered %d: %s", e.Code, e.Body)
}

// PostJSON posts body to address with the given headers and returns the
// answer's body (at most 1 MiB). Errors leave out the address, which may be
// a secret webhook URL.
func (c *Client) PostJSON(ctx context.Context, address string, body []byte, headers map[string]string) ([]byte, error) {
	wait := c.retry.Min
	var lastErr error
	for attempt := 0; ; attempt++ {
		out, retry, err := c.once(ctx, address, body, headers)
		if err == nil {
			return out, nil
		}
		lastErr = err
		if !retry || attempt >= c.retry.Max {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (after %d attempts, last: %v)", ctx.Err(), attempt+1, lastErr)
		case <-time.After(wait):
		}
		if wait *= 2; wait > c.retry.Cap {
			wait = c.retry.Cap
		}
	}
	return nil, lastErr
}

func (c *Client) once(ctx context.Context, address string, body []byte, headers map[string]string) ([]byte, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return nil, false, errors.New("invalid address")
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// url.Error quotes the URL; keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, true, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return out, false, nil
	}
	if len(out) > 256 {
		out = out[:256]
	}
	retry := resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented)
	return nil, retry, &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(out))}
}
