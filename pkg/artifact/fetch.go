package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/httpretry"
	"github.com/eddyops/eddy/pkg/redact"
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
	HostOverride string
}

// Fetch downloads the artifact at rawURL into a temporary file, checks its
// bytes against want (`<algorithm>:<hex>`; a bare hex is taken as sha256 as
// Flux does) and extracts it into dir. It returns ErrNotFound (wrapped) on a
// 404 and an error that is ErrDigestMismatch when the bytes differ; errors name the URL without its query and never a local path.
func (f *Fetcher) Fetch(ctx context.Context, rawURL, want, dir string) error {
	return f.FetchWith(ctx, rawURL, want, func(r io.Reader, lim Limits) error {
		return Extract(r, dir, lim)
	})
}

// FetchWith is Fetch with the extraction left to use, which gets the
// verified tar.gz stream and the Fetcher's limits (for ReadArchive); its
// error is returned wrapped, prefixed "failed to extract artifact from <url>".
func (f *Fetcher) FetchWith(ctx context.Context, rawURL, want string, use func(r io.Reader, lim Limits) error) error {
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

	tmp, err := os.CreateTemp("", "artifact-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	if err := f.download(ctx, u.String(), tmp); err != nil {
		return fmt.Errorf("failed to download artifact from %s: %w", shown, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	v := d.Verifier()
	if _, err := io.Copy(v, tmp); err != nil {
		return err
	}
	if !v.Verified() {
		return digestMismatch(fmt.Sprintf("failed to verify artifact from %s: computed digest differs from %s", shown, want))
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	lim := f.Limits
	if lim.MaxBytes == 0 && lim.MaxFiles == 0 {
		lim = DefaultLimits
	}
	if err := use(tmp, lim); err != nil {
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

// download writes the body at rawURL into dst, retrying (f.Retries times,
// waiting f.RetryWait doubled up to 30s) after connection errors, 5xx
// answers and bodies cut short; a 404 is ErrNotFound at once. Errors carry
// no URL.
func (f *Fetcher) download(ctx context.Context, rawURL string, dst *os.File) error {
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	wait := f.RetryWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	rc := httpretry.New(c, f.Retries, wait, max(wait, 30*time.Second), httpretry.RetryErrorsAnd5xx)
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	// Reading the body within the retry loop retries a download cut short.
	req.SetResponseHandler(func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		if err := dst.Truncate(0); err != nil {
			return err
		}
		if _, err := dst.Seek(0, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(dst, resp.Body)
		return err
	})
	resp, err := rc.Do(req)
	if err != nil {
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
