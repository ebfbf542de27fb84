package source

import (
	"errors"
	"strings"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// maskedError is a Git error whose message has the userinfo of every URL it
// quotes masked: go-git quotes the request URL in some errors (an
// unexpected HTTP status) with its user name, often a token
// (`https://<token>@host`). Unwrap keeps the cause for errors.Is and As.
type maskedError struct{ err error }

func (e maskedError) Error() string { return redact.Message(worded(e.err)) }
func (e maskedError) Unwrap() error { return e.err }

// mask wraps err (nil stays nil) so that its message carries no URL
// credentials.
func mask(err error) error {
	if err == nil {
		return nil
	}
	return maskedError{err}
}

// unexplained words the HTTP answers that go-git turns into
// "<sentinel>: <the body of the answer>", for when the body is empty (as
// `git http-backend`'s 403 for a push it does not take): the message then
// says the status and what it usually means instead of ending in ": ".
var unexplained = []struct {
	err  error
	says string
}{
	{transport.ErrAuthenticationRequired, "the server answered 401 Unauthorized without a reason: give credentials in the GitRepository's secretRef"},
	{transport.ErrAuthorizationFailed, "the server answered 403 Forbidden without a reason: the credentials lack access " +
		"(write access, for a push), or the server takes no pushes"},
	{transport.ErrRepositoryNotFound, "the server answered 404 Not Found without a reason"},
}

// worded returns err's message with the server's reason trimmed of
// surrounding space and, when the server gave none, the empty clause
// replaced by what the status says (unexplained).
func worded(err error) string {
	msg := err.Error()
	for _, u := range unexplained {
		if !errors.Is(err, u.err) {
			continue
		}
		head, reason, ok := cutLast(msg, u.err.Error()+": ")
		if !ok {
			return msg
		}
		if reason = strings.TrimSpace(reason); reason == "" {
			return head + u.err.Error() + " (" + u.says + ")"
		}
		return head + u.err.Error() + ": " + strings.Join(strings.Fields(reason), " ")
	}
	return msg
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
