package source

import "github.com/eddyops/eddy/pkg/redact"

// maskedError is a Git error whose message has the userinfo of every URL it
// quotes masked: go-git quotes the request URL in some errors (an
// unexpected HTTP status) with its user name, often a token
// (`https://<token>@host`). Unwrap keeps the cause for errors.Is and As.
type maskedError struct{ err error }

func (e maskedError) Error() string { return redact.Message(e.err.Error()) }
func (e maskedError) Unwrap() error { return e.err }

// mask wraps err (nil stays nil) so that its message carries no URL
// credentials.
func mask(err error) error {
	if err == nil {
		return nil
	}
	return maskedError{err}
}
