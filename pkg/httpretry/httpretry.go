// Package httpretry builds the retrying HTTP clients of Eddy's three
// retry loops (event posting, artifact fetch, notification delivery) on
// hashicorp/go-retryablehttp, the library Flux uses for the same loops.
package httpretry

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// New returns a client that sends through c (nil: a pooled client without
// timeout) and retries up to retries times (0: one attempt) when policy
// says so, waiting minWait, 2·minWait, 4·minWait, … capped at maxWait; a
// 429 or 503 answer's Retry-After header sets the wait instead
// (retryablehttp.DefaultBackoff). It logs nothing. When no attempt
// succeeds it returns the last answer (its body unread: the caller closes
// it) or the last error, as a single http.Client.Do would, so errors read
// as before; a context ended during a wait returns ctx.Err(). Bodies of
// answers that are retried are drained, so connections are reused.
func New(c *http.Client, retries int, minWait, maxWait time.Duration, policy retryablehttp.CheckRetry) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	if c != nil {
		rc.HTTPClient = c
	}
	rc.RetryMax = max(retries, 0)
	rc.RetryWaitMin, rc.RetryWaitMax = minWait, maxWait
	rc.CheckRetry = policy
	rc.Logger = nil
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return rc
}

// RetryErrorsAnd5xx is the policy of the event and artifact loops: retry
// after a connection error and on any 5xx answer; a 4xx answer (for events,
// 429: the receiver already has it) or a success is final; so is the end of
// the request's context.
func RetryErrorsAnd5xx(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, nil
	}
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded), nil
	}
	return resp.StatusCode >= 500, nil
}
