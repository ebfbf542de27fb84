package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/httpretry"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/hashicorp/go-retryablehttp"
	digest "github.com/opencontainers/go-digest"
)

// ErrNotFound means the artifact's URL answered 404: the source has not
// stored it (yet), or it was collected. Flux compatible: consumers report
// ArtifactFailed and retry after --requeue-dependency.
var ErrNotFound = errors.New("artifact not found")

// Fetcher downloads artifacts, verifies their digests and extracts them.
type Fetcher struct {
	// Client does the requests; default: a client with a 30s timeout.
	Client *http.Client
	// Retries after connection errors and 5xx answers; Flux's --http-retry (9).
	Retries int
	// RetryWait is the first wait between attempts, doubled each time up to
	// 30s; Flux waits 5s to 30s.
	RetryWait time.Duration
	// Limits bound the extraction; zero means DefaultLimits.
	Limits Limits
	// HostOverride, when set, replaces the host:port of artifact URLs. Flux
	// compatible: SOURCE_CONTROLLER_LOCALHOST, for running outside the cluster.
	// FetchArtifact applies it after the signature check.
	HostOverride string
	// Keys gives source-controller's signing key to FetchArtifact (a
	// SecretKeyring in the controllers); nil refuses every artifact.
	Keys Keyring
}

// Fetch downloads the artifact at rawURL into memory or a temporary
// file of at most the extraction limit, checks its bytes against want
// (`<algorithm>:<hex>`; a bare hex is taken as sha256 as Flux does) as they
// stream in and extracts it into dir. It returns ErrNotFound (wrapped) on a
// 404, an error that is ErrDigestMismatch when the bytes differ and one
// that is ErrTooLarge past the limit; errors name the URL without its query
// and never a local path. It does not check who published the artifact:
// controllers use FetchArtifact.
func (f *Fetcher) Fetch(ctx context.Context, rawURL, want, dir string) error {
	return f.FetchWith(ctx, rawURL, want, func(r io.Reader, lim Limits) error {
		return Extract(r, dir, lim)
	})
}

// FetchWith is Fetch with the extraction left to use, which gets the
// verified tar.gz stream and the Fetcher's limits (for ReadArchive); its
// error is returned wrapped, prefixed "failed to extract artifact from <url>".
// Like Fetch it does not check who published the artifact.
func (f *Fetcher) FetchWith(ctx context.Context, rawURL, want string, use func(r io.Reader, lim Limits) error) error {
	return f.fetch(ctx, rawURL, want, f.maxDownload(), use)
}

// FetchArtifact is FetchWith for the artifact a in owner's status, as the
// controllers fetch: before any request it refuses an artifact whose
// signature (VerifySignature with f.Keys) is missing or wrong, and one
// whose size is over the limit; the download is cut past a.Size (or the
// limit when the size is unknown). The size is exact, with no slack: it is
// signed with the URL and digest, and a content-addressed file has exactly
// that many bytes, so a longer body cannot match its digest anyway.
func (f *Fetcher) FetchArtifact(ctx context.Context, owner Owner, a *meta.Artifact, use func(r io.Reader, lim Limits) error) error {
	if a == nil {
		return fmt.Errorf("%s has no artifact", owner)
	}
	if err := VerifySignature(ctx, f.Keys, owner, a); err != nil {
		return err
	}
	return f.fetchSized(ctx, owner, a, use)
}

// FetchExternal is FetchArtifact for an artifact another controller
// published (an ExternalArtifact's): no signature is asked for, so the
// writers of owner's status are the trust boundary, but the digest is
// required and the bytes are checked against it as they stream.
func (f *Fetcher) FetchExternal(ctx context.Context, owner Owner, a *meta.Artifact, use func(r io.Reader, lim Limits) error) error {
	if a == nil {
		return fmt.Errorf("%s has no artifact", owner)
	}
	if a.Digest == "" {
		return fmt.Errorf("the artifact of %s has no digest", owner)
	}
	return f.fetchSized(ctx, owner, a, use)
}

// fetchSized fetches a, refusing it when its size is over the limit and
// cutting the download past its size.
func (f *Fetcher) fetchSized(ctx context.Context, owner Owner, a *meta.Artifact, use func(r io.Reader, lim Limits) error) error {
	limit := f.maxDownload()
	if a.Size != nil {
		if *a.Size > limit || *a.Size < 0 {
			return fmt.Errorf("%w: the artifact of %s is %d bytes, the limit is %d", ErrTooLarge, owner, *a.Size, limit)
		}
		limit = *a.Size
	}
	return f.fetch(ctx, a.URL, a.Digest, limit, use)
}

// ErrTooLarge is wrapped by the errors about an artifact larger than the
// extraction limit or a body longer than its artifact's size.
var ErrTooLarge = errors.New("artifact too large")

// memoryMax is the largest body kept in memory; a larger one goes to a
// temporary file of at most its cap, removed as soon as the fetch ends.
const memoryMax = 8 << 20

// maxDownload is the most bytes a download may have: the extraction's
// MaxBytes, so no download is larger than what may be extracted from it.
func (f *Fetcher) maxDownload() int64 {
	if f.Limits.MaxBytes > 0 {
		return f.Limits.MaxBytes
	}
	return DefaultLimits.MaxBytes
}

func (f *Fetcher) limits() Limits {
	if f.Limits.MaxBytes == 0 && f.Limits.MaxFiles == 0 {
		return DefaultLimits
	}
	return f.Limits
}

// fetch downloads rawURL, cutting the body past limit bytes and checking
// it against want as it streams, and hands use the verified bytes only.
func (f *Fetcher) fetch(ctx context.Context, rawURL, want string, limit int64, use func(r io.Reader, lim Limits) error) error {
	if want == "" {
		return errors.New("artifact has no digest")
	}
	if !strings.Contains(want, ":") {
		want = "sha256:" + want
	}
	d, err := digest.Parse(want)
	if err != nil {
		return fmt.Errorf("artifact digest %q: %w", want, err)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("artifact URL %q: %w", rawURL, err)
	}
	if f.HostOverride != "" {
		u.Host = f.HostOverride
	}
	shown := u.Scheme + "://" + u.Host + u.Path

	b, err := newBody(limit)
	if err != nil {
		return err
	}
	defer b.close()
	if err := f.download(ctx, u.String(), d, limit, b); err != nil {
		switch {
		case errors.Is(err, ErrDigestMismatch):
			return digestMismatch(fmt.Sprintf("failed to verify artifact from %s: computed digest differs from %s", shown, want))
		case errors.Is(err, ErrTooLarge):
			return fmt.Errorf("failed to download artifact from %s: %w: body longer than %d bytes", shown, ErrTooLarge, limit)
		}
		return fmt.Errorf("failed to download artifact from %s: %w", shown, err)
	}
	r, err := b.reader()
	if err != nil {
		return err
	}
	if err := use(r, f.limits()); err != nil {
		return fmt.Errorf("failed to extract artifact from %s: %w", shown, err)
	}
	return nil
}

// digestMismatch is a download whose bytes do not match the advertised
// digest; it is ErrDigestMismatch for errors.Is.
type digestMismatch string

func (e digestMismatch) Error() string        { return string(e) }
func (e digestMismatch) Is(target error) bool { return target == ErrDigestMismatch }

type httpStatus int

func (s httpStatus) Error() string { return fmt.Sprintf("unexpected status %d", int(s)) }

// download streams the body at rawURL into dst through a digest check and
// a cut at limit bytes, retrying (f.Retries times, waiting f.RetryWait
// doubled up to 30s) after connection errors, 5xx answers and bodies cut
// short; a 404 is ErrNotFound at once, a body over limit ErrTooLarge and
// one not matching d ErrDigestMismatch, neither retried. Errors carry no
// URL.
func (f *Fetcher) download(ctx context.Context, rawURL string, d digest.Digest, limit int64, dst *body) error {
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	wait := f.RetryWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	policy := func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrDigestMismatch) {
			return false, nil
		}
		return httpretry.RetryErrorsAnd5xx(ctx, resp, err)
	}
	rc := httpretry.New(c, f.Retries, wait, max(wait, 30*time.Second), policy)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	// Reading the body within the retry loop retries a download cut short.
	req.SetResponseHandler(func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		if resp.ContentLength > limit {
			return ErrTooLarge // announced too long: not read at all
		}
		if err := dst.reset(); err != nil {
			return err
		}
		v := d.Verifier()
		n, err := io.Copy(io.MultiWriter(dst, v), io.LimitReader(resp.Body, limit))
		if err != nil {
			return err
		}
		if n == limit {
			// One more byte says the body is too long; it never reaches dst.
			if m, _ := io.ReadFull(resp.Body, make([]byte, 1)); m > 0 {
				return ErrTooLarge
			}
		}
		if !v.Verified() {
			return ErrDigestMismatch
		}
		return nil
	})
	resp, err := rc.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close() // a cut body: end its connection now
		}
		return redact.URLError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return httpStatus(resp.StatusCode)
	}
	return nil
}
