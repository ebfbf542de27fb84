package chart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/eddyops/eddy/pkg/redact"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// Repository is a chart repository: an HTTP index or an OCI registry.
type Repository interface {
	// Select returns the version of the chart name that version selects
	// (see SelectVersion).
	Select(ctx context.Context, name, version string) (*repo.ChartVersion, error)
	// Download returns the chart archive of a selected version.
	Download(ctx context.Context, cv *repo.ChartVersion) ([]byte, error)
}

// SelectVersion picks the version of name from candidates (versions
// and their creation times, ordered as in an index): a version equal to
// the string version wins; otherwise the highest that satisfies version as
// a Masterminds SemVer constraint, "" and "*" meaning the latest stable one;
// equal versions are broken by the later `created`. Flux compatible.
func SelectVersion(candidates repo.ChartVersions, name, version string) (*repo.ChartVersion, error) {
	if len(candidates) == 0 {
		return nil, fmt.Errorf("no chart name found: '%s'", name)
	}
	if version != "" && version != "*" {
		for _, cv := range candidates {
			if cv.Version == version {
				return cv, nil
			}
		}
	}
	c, err := semver.NewConstraint(orStar(version))
	if err != nil {
		return nil, fmt.Errorf("invalid version constraint '%s': %w", version, err)
	}
	var best *repo.ChartVersion
	var bestV *semver.Version
	for _, cv := range candidates {
		v, err := semver.NewVersion(cv.Version)
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(bestV) || (v.Equal(bestV) && cv.Created.After(best.Created)) {
			best, bestV = cv, v
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no '%s' chart with version matching '%s' found", name, version)
	}
	return best, nil
}

// HTTPRepository is a chart repository served over HTTP(S) whose index is
// already loaded (source-controller reads it from the HelmRepository's
// stored artifact).
type HTTPRepository struct {
	// URL is the repository's URL (HelmRepository spec.url).
	URL   string
	Index *repo.IndexFile
	// Client downloads charts (its transport carries the TLS settings);
	// nil means http.DefaultClient.
	Client *http.Client
	// Username and Password, when set, are sent as basic auth to the
	// repository's host, to other hosts only with PassCredentials.
	Username, Password string
	PassCredentials    bool
	Limits             Limits
}

// Select implements Repository.
func (r *HTTPRepository) Select(_ context.Context, name, version string) (*repo.ChartVersion, error) {
	if r.Index == nil {
		return nil, errors.New("no repository index")
	}
	return SelectVersion(r.Index.Entries[name], name, version)
}

// Download implements Repository: it GETs the version's first URL, resolved
// relative to the repository URL, and refuses an archive over
// Limits.MaxChartSize.
func (r *HTTPRepository) Download(ctx context.Context, cv *repo.ChartVersion) ([]byte, error) {
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart '%s' version '%s' has no downloadable URLs", cv.Name, cv.Version)
	}
	base, err := url.Parse(strings.TrimSuffix(r.URL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("invalid chart repository URL: %s", redact.URL(r.URL))
	}
	ref, err := url.Parse(cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("invalid chart URL format '%s'", redact.URL(cv.URLs[0]))
	}
	u := base.ResolveReference(ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("invalid chart URL format '%s'", redact.URL(u.String()))
	}
	if r.Username != "" || r.Password != "" {
		if u.Host == base.Host || r.PassCredentials {
			req.SetBasicAuth(r.Username, r.Password)
		}
	}
	c := r.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to download chart from '%s': %s", redact.URL(u.String()), redact.URLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to download chart from '%s': %s", redact.URL(u.String()), resp.Status)
	}
	max := r.Limits.orDefault().MaxChartSize
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("failed to download chart from '%s': %s", redact.URL(u.String()), err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("chart archive exceeds the maximum chart size of %d bytes", max)
	}
	return data, nil
}

// OCIRepository is a chart repository in an OCI registry: chart name lives
// at `<URL>/<name>`, its versions are the repository's SemVer tags.
type OCIRepository struct {
	// URL is `oci://<host>/<path>` (HelmRepository spec.url).
	URL    string
	Client *registry.Client
	Limits Limits
}

func (r *OCIRepository) ref(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(r.URL, "oci://"), "/") + "/" + name
}

// Select implements Repository: the tags of `<URL>/<name>` are the
// candidates; the selected version's Digest is the manifest digest the tag
// resolves to now, so Download pulls exactly that.
func (r *OCIRepository) Select(_ context.Context, name, version string) (*repo.ChartVersion, error) {
	if strings.ContainsAny(name, ":@") {
		return nil, fmt.Errorf("chart name '%s' must not carry a tag or digest: the version comes from spec.version", name)
	}
	ref := r.ref(name)
	tags, err := r.Client.Tags(ref)
	if err != nil {
		return nil, fmt.Errorf("failed to list tags of '%s': %s", redact.URL(ref), redact.URLError(err))
	}
	var cands repo.ChartVersions
	for _, t := range tags {
		cv := &repo.ChartVersion{URLs: []string{ref + ":" + t}}
		cv.Metadata = newMetadata(name, t)
		cands = append(cands, cv)
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("no SemVer tags found for '%s'", redact.URL(ref))
	}
	cv, err := SelectVersion(cands, name, version)
	if err != nil {
		return nil, err
	}
	desc, err := r.Client.Resolve(cv.URLs[0])
	if err != nil {
		return nil, fmt.Errorf("failed to resolve '%s': %s", redact.URL(cv.URLs[0]), redact.URLError(err))
	}
	cv.Digest = desc.Digest.String()
	return cv, nil
}

// Download implements Repository: it pulls the manifest by the digest
// Select resolved and checks that the registry served that manifest.
func (r *OCIRepository) Download(_ context.Context, cv *repo.ChartVersion) ([]byte, error) {
	if cv.Digest == "" {
		return nil, fmt.Errorf("chart '%s' version '%s' has no resolved digest", cv.Name, cv.Version)
	}
	ref := r.ref(cv.Name) + "@" + cv.Digest
	res, err := r.Client.Pull(ref, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("failed to pull '%s': %s", redact.URL(ref), redact.URLError(err))
	}
	if res.Manifest == nil || res.Manifest.Digest != cv.Digest {
		return nil, fmt.Errorf("registry served a manifest other than '%s'", cv.Digest)
	}
	if res.Chart == nil || len(res.Chart.Data) == 0 {
		return nil, fmt.Errorf("'%s' holds no chart layer", redact.URL(ref))
	}
	if max := r.Limits.orDefault().MaxChartSize; int64(len(res.Chart.Data)) > max {
		return nil, fmt.Errorf("chart archive exceeds the maximum chart size of %d bytes", max)
	}
	return res.Chart.Data, nil
}

// RemoteOptions describe a chart build from a chart repository.
type RemoteOptions struct {
	// Name and Version are spec.chart and spec.version.
	Name, Version string
	// VersionMetadata, when set, replaces the pulled version's build
	// metadata (the generation, with valuesFiles).
	VersionMetadata string
	// ValuesFiles are merged in order, as paths inside the chart, into its
	// values.yaml; missing ones are skipped with IgnoreMissingValuesFiles.
	ValuesFiles              []string
	IgnoreMissingValuesFiles bool
	Limits                   Limits
	Cached                   *Cached
	Force                    bool
	// Verify, when set, checks the selected version's signature at every
	// build, cached or not, as Flux does. ErrNotVerified lets the chart
	// through without Build.Verified.
	Verify func(ctx context.Context, cv *repo.ChartVersion) error
}

// ErrNotVerified is what RemoteOptions.Verify returns when the trust
// settings let a chart through without vouching for it (notation's
// levels skip and audit).
var ErrNotVerified = errors.New("chart signature not verified")

// BuildRemote selects and downloads the chart from r. Without values files
// or metadata it is stored as pulled; otherwise it is repackaged with the
// merged values and new version. A selection matching o.Cached (unless
// Force) is not downloaded. Errors are *BuildError.
func BuildRemote(ctx context.Context, r Repository, o RemoteOptions) (*Build, error) {
	cv, err := r.Select(ctx, o.Name, o.Version)
	if err != nil {
		return nil, fail(ErrChartReference, "failed to get chart version for remote reference: %s", err)
	}
	b := &Build{Name: cv.Name, Version: cv.Version}
	if o.Verify != nil {
		switch err := o.Verify(ctx, cv); {
		case errors.Is(err, ErrNotVerified):
		case err != nil:
			return nil, &BuildError{Kind: ErrVerification, Err: err}
		default:
			b.Verified = true
		}
	}
	if b.Version, err = withMetadata(b.Version, o.VersionMetadata); err != nil {
		return nil, err
	}
	b.Packaged = o.VersionMetadata != "" || len(o.ValuesFiles) > 0
	if hit(o.Cached, o.Force, b) {
		return b, nil
	}
	data, err := r.Download(ctx, cv)
	if err != nil {
		return nil, fail(ErrChartPull, "failed to download chart for remote reference: %s", err)
	}
	c, err := LoadArchive(data, o.Limits)
	if err != nil {
		return nil, fail(ErrChartPull, "failed to load downloaded chart: %s", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fail(ErrChartPull, "downloaded chart is invalid: %s", err)
	}
	if c.Name() != cv.Name {
		return nil, fail(ErrChartPull, "downloaded chart is named '%s', not '%s'", c.Name(), cv.Name)
	}
	if !b.Packaged {
		b.Data = data
		return b, nil
	}
	if b.ValuesFiles, err = mergeInto(c, o.ValuesFiles, o.IgnoreMissingValuesFiles, readFromChart(c)); err != nil {
		return nil, err
	}
	c.Metadata.Version = b.Version
	if b.Data, err = Package(c); err != nil {
		return nil, &BuildError{Kind: ErrChartPackage, Err: err}
	}
	return b, nil
}

func newMetadata(name, version string) *helmchart.Metadata {
	return &helmchart.Metadata{Name: name, Version: version}
}

// MaxIndexSize bounds a repository index fetched for a dependency whose
// repository has no HelmRepository (Flux's --helm-index-max-size default).
const MaxIndexSize = 50 << 20

// FetchIndex downloads `<repoURL>/index.yaml` with client (nil: the
// default) and returns the HTTPRepository it describes, without
// credentials. Flux compatible: a dependency on a repository no
// HelmRepository describes is fetched anonymously.
func FetchIndex(ctx context.Context, client *http.Client, repoURL string, lim Limits) (*HTTPRepository, error) {
	u := strings.TrimSuffix(repoURL, "/") + "/index.yaml"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid chart repository URL '%s'", redact.URL(repoURL))
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch '%s': %s", redact.URL(u), redact.URLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to fetch '%s': %s", redact.URL(u), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxIndexSize+1))
	if err != nil {
		return nil, fmt.Errorf("failed to fetch '%s': %s", redact.URL(u), err)
	}
	if len(data) > MaxIndexSize {
		return nil, fmt.Errorf("index of '%s' exceeds the maximum of %d bytes", redact.URL(repoURL), MaxIndexSize)
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(data, idx); err != nil || idx.APIVersion == "" {
		return nil, fmt.Errorf("'%s' is not a chart repository index", redact.URL(u))
	}
	idx.SortEntries()
	return &HTTPRepository{URL: repoURL, Index: idx, Client: client, Limits: lim}, nil
}
