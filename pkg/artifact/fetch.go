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
// 404; errors name the URL without its query and never a local path.
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

	client := f.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	wait := f.RetryWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	for attempt := 0; ; attempt++ {
		err = f.download(ctx, client, u.String(), tmp)
		if err == nil || errors.Is(err, ErrNotFound) || attempt >= f.Retries || ctx.Err() != nil {
			break
		}
		if !retriable(err) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
	if err != nil {
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
		return fmt.Errorf("failed to verify artifact from %s: computed digest differs from %s", shown, want)
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

type httpStatus int

func (s httpStatus) Error() string { return fmt.Sprintf("unexpected status %d", int(s)) }

func retriable(err error) bool {
	var s httpStatus
	if errors.As(err, &s) {
		return s >= 500
	}
	return true // connection errors
}

func (f *Fetcher) download(ctx context.Context, c *http.Client, rawURL string, dst *os.File) error {
	if err := dst.Truncate(0); err != nil {
		return err
	}
	if _, err := dst.Seek(0, io.SeekStart); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return httpStatus(resp.StatusCode)
	}
	_, err = io.Copy(dst, resp.Body)
	return err
}
