package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Op is what a failed registry call was doing.
type Op string

const (
	// OpList is a scan (tags/list).
	OpList Op = "list tags of"
	// OpDigest is a digest look-up (HEAD manifest).
	OpDigest Op = "get the digest of"
)

// Kind classifies an Error, for the controller's reason.
type Kind int

const (
	// KindOther is any other failure.
	KindOther Kind = iota
	// KindInvalidImage: the image name does not parse (ParseImage).
	KindInvalidImage
	// KindUnauthorized: the registry answered 401 or 403.
	KindUnauthorized
	// KindRateLimited: the registry answered 429, or its host is backing off.
	KindRateLimited
	// KindTooManyTags: more than Client.MaxTags tags.
	KindTooManyTags
	// KindInvalidResponse: the answer is not what the API says (not JSON).
	KindInvalidResponse
	// KindUnreachable: no connection, TLS failure, or the timeout.
	KindUnreachable
	// KindNotFound: the repository or tag does not exist (404).
	KindNotFound
)

// Error is a registry failure with a stable, secret-free message:
// `<op> <name>: <what>`.
type Error struct {
	Kind Kind
	msg  string
}

func (e *Error) Error() string { return e.msg }

// KindOf returns err's Kind, KindOther if err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

// tooManyTags is a scan past Client.MaxTags.
type tooManyTags struct{ max int }

func (e *tooManyTags) Error() string {
	return fmt.Sprintf("more than %d tags, the most a scan keeps; exclude tags at the registry or use a repository with fewer", e.max)
}

// errPaginationLoop is a tags/list whose next page is one already read.
var errPaginationLoop = errors.New("the registry's tag list pages loop (a Link header names a page already read)")

// ParseImage parses an ImageRepository's spec.image: a repository without
// URL scheme and without tag or digest ("ghcr.io/org/app", "nginx"),
// plain HTTP if insecure. Errors are *Error of KindInvalidImage.
func ParseImage(image string, insecure bool) (name.Repository, error) {
	invalid := func(format string, a ...any) (name.Repository, error) {
		return name.Repository{}, &Error{Kind: KindInvalidImage, msg: fmt.Sprintf(format, a...)}
	}
	if scheme, _, ok := strings.Cut(image, "://"); ok {
		return invalid("image %q must not start with a URL scheme: remove %q", image, scheme+"://")
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(image, opts...)
	if err != nil {
		return invalid("image %q is not a valid repository name", image)
	}
	path := strings.TrimPrefix(image, ref.Context().RegistryStr())
	if _, tag, ok := strings.Cut(path, ":"); ok {
		return invalid("image %q must not include a tag: remove %q", image, ":"+tag)
	}
	if strings.Contains(path, "@") {
		return invalid("image %q must not include a digest", image)
	}
	return ref.Context(), nil
}

// wrap turns a ggcr or transport error into an *Error on ref.
func (c *Client) wrap(ctx context.Context, op Op, ref string, o Options, err error) error {
	kind, what := classify(ctx, err, o)
	what = redact.NewValues(redact.Mask, o.secrets()).Mask(redact.Message(what))
	return &Error{Kind: kind, msg: fmt.Sprintf("%s %s: %s", op, ref, what)}
}

func classify(ctx context.Context, err error, o Options) (Kind, string) {
	var (
		rl  *RateLimitedError
		tm  *tooManyTags
		tl  *tooLargeError
		te  *transport.Error
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &rl):
		return KindRateLimited, rl.Error()
	case errors.As(err, &tm):
		return KindTooManyTags, tm.Error()
	case errors.As(err, &tl):
		return KindTooManyTags, tl.Error()
	case errors.Is(err, errPaginationLoop):
		return KindInvalidResponse, err.Error()
	case errors.As(err, &se), errors.As(err, &ute):
		return KindInvalidResponse, "the registry's tag list is not JSON: " + redact.URLError(err).Error()
	case errors.As(err, &te):
		return transportKind(te), transportMessage(te)
	case ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return KindUnreachable, fmt.Sprintf("timed out after %s", o.Timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) || strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:") {
		return KindUnreachable, "registry unreachable: " + redact.URLError(err).Error()
	}
	return KindOther, redact.URLError(err).Error()
}

func transportKind(te *transport.Error) Kind {
	switch te.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return KindUnauthorized
	case http.StatusNotFound:
		return KindNotFound
	case http.StatusTooManyRequests:
		return KindRateLimited
	}
	return KindOther
}

// transportMessage is the status and the registry's error codes and
// messages (never its details, which may echo the request).
func transportMessage(te *transport.Error) string {
	msg := fmt.Sprintf("%d %s", te.StatusCode, http.StatusText(te.StatusCode))
	var parts []string
	for _, d := range te.Errors {
		p := string(d.Code)
		if d.Message != "" {
			p += ": " + d.Message
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, "; ") + ")"
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return msg
}
