package notifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/hashicorp/go-retryablehttp"
)

// Request is one call to a destination.
type Request struct {
	// Method defaults to POST.
	Method string
	URL    string
	Body   []byte
	// ContentType defaults to application/json.
	ContentType string
	Headers     map[string]string
	// User and Password, when User or Password is set, are sent as HTTP
	// basic authentication.
	User, Password string
}

// Send makes r with retries and returns the answer's body (at most 1 MiB;
// the rest is drained so the connection is reused). Errors leave out the
// address, which may be a secret webhook URL or carry a token.
func (c *Client) Send(ctx context.Context, r Request) ([]byte, error) {
	method, contentType := r.Method, r.ContentType
	if method == "" {
		method = http.MethodPost
	}
	if contentType == "" {
		contentType = "application/json"
	}
	tries := &attempts{}
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, attemptsKey{}, tries), method, r.URL, r.Body)
	if err != nil {
		return nil, errors.New("invalid address")
	}
	req.Header.Set("Content-Type", contentType)
	if r.User != "" || r.Password != "" {
		req.SetBasicAuth(r.User, r.Password)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && tries.last != nil {
			return nil, fmt.Errorf("%w (after %d attempts, last: %v)", ctx.Err(), tries.n, tries.last)
		}
		return nil, fmt.Errorf("sending: %w", redact.URLError(err))
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return out, nil
	}
	return nil, &StatusError{Code: resp.StatusCode, Body: events.Truncate(string(bytes.TrimSpace(out)), 256)}
}
