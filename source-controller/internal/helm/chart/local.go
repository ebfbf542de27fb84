package chart

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// RepositoryResolver returns the Repository of a dependency's repository
// URL, or an error when there is none (source-controller: a HelmRepository
// object of the namespace with that URL).
type RepositoryResolver func(ctx context.Context, repoURL string) (Repository, error)

// Cached describes the stored artifact: a build that would produce the same
// chart name and version returns Cached instead of building again.
type Cached struct {
	Name, Version string
	ValuesFiles   []string
}

// LocalOptions describe a chart build from a source tree (a GitRepository
// or Bucket artifact extracted at Root).
type LocalOptions struct {
	// Root is the extracted source artifact; Path the chart directory (or
	// packaged .tgz) in it, spec.chart.
	Root, Path string
	// VersionMetadata, when set, replaces the chart version's SemVer build
	// metadata (`+<12 hex>`, `+<gen>`, `+<12 hex>.<gen>`).
	VersionMetadata string
	// ValuesFiles are merged in order, relative to Root, into the packaged
	// values.yaml; missing ones are skipped with IgnoreMissingValuesFiles.
	ValuesFiles              []string
	IgnoreMissingValuesFiles bool
	// Repositories resolves remote dependencies; nil allows only local ones.
	Repositories RepositoryResolver
	Limits       Limits
	// Cached, unless Force, short-cuts a build of the same name and version.
	Cached *Cached
	Force  bool
}

// BuildLocal builds the chart at o.Root/o.Path: it applies the version
// metadata, merges the values files, adds the dependencies missing from the
// chart (from its charts/ directory, `file://` paths inside Root, then
// o.Repositories) and packages it. A packaged .tgz without values files or
// metadata is returned as it is (Packaged false). Errors are *BuildError.
func BuildLocal(ctx context.Context, o LocalOptions) (*Build, error) {
	c, err := loadAt(o.Root, o.Path, o.Limits)
	if err != nil {
		return nil, &BuildError{Kind: ErrChartReference, Err: err}
	}
	if err := c.Validate(); err != nil {
		return nil, fail(ErrChartReference, "invalid chart at path '%s': %s", o.Path, err)
	}
	b := &Build{Name: c.Name(), Version: c.Metadata.Version}
	if b.Version, err = withMetadata(b.Version, o.VersionMetadata); err != nil {
		return nil, err
	}
	fi, _ := os.Stat(joinRoot(o.Root, o.Path))
	isDir := fi != nil && fi.IsDir()
	b.Packaged = isDir || o.VersionMetadata != "" || len(o.ValuesFiles) > 0
	if hit(o.Cached, o.Force, b) {
		return b, nil
	}
	if !b.Packaged {
		if b.Data, err = os.ReadFile(joinRoot(o.Root, o.Path)); err != nil {
			return nil, &BuildError{Kind: ErrChartPull, Err: scrub(err, o.Root)}
		}
		return b, nil
	}
	if b.ValuesFiles, err = mergeInto(c, o.ValuesFiles, o.IgnoreMissingValuesFiles, readFromDir(o.Root)); err != nil {
		return nil, err
	}
	c.Metadata.Version = b.Version
	if isDir {
		if b.ResolvedDependencies, err = addDependencies(ctx, o, c); err != nil {
			return nil, &BuildError{Kind: ErrDependency, Err: err}
		}
	}
	if b.Data, err = Package(c); err != nil {
		return nil, &BuildError{Kind: ErrChartPackage, Err: err}
	}
	return b, nil
}

func joinRoot(root, rel string) string {
	p, err := within(root, rel)
	if err != nil {
		return root
	}
	return p
}

// hit reports whether the cached artifact is the build b describes.
func hit(c *Cached, force bool, b *Build) bool {
	if c == nil || force || c.Name != b.Name || c.Version != b.Version {
		return false
	}
	b.Cached = true
	b.ValuesFiles = c.ValuesFiles
	return true
}

// Package returns c as a chart archive, as `helm package` writes it.
func Package(c *helmchart.Chart) ([]byte, error) {
	dir, err := os.MkdirTemp("", "helmchart-package-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a temporary directory")
	}
	defer os.RemoveAll(dir)
	p, err := chartutil.Save(c, dir)
	if err != nil {
		return nil, scrub(err, dir)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, scrub(err, dir)
	}
	return data, nil
}

// addDependencies adds the dependencies the chart declares (Chart.lock's if
// present) and does not carry yet. Flux compatible: a dependency without
// repository comes from the chart's charts/<name>, `file://<path>` from
// <path> relative to the chart, others from their repository; an alias
// renames the added chart.
func addDependencies(ctx context.Context, o LocalOptions, c *helmchart.Chart) (int, error) {
	reqs := c.Metadata.Dependencies
	if c.Lock != nil {
		reqs = c.Lock.Dependencies
	}
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	if len(have) == len(reqs) {
		return 0, nil
	}
	n := 0
	for _, dep := range reqs {
		name := dep.Name
		if dep.Alias != "" {
			name = dep.Alias
		}
		if have[name] {
			continue
		}
		var (
			ch  *helmchart.Chart
			err error
		)
		if dep.Repository == "" || strings.HasPrefix(dep.Repository, "file://") {
			ch, err = localDependency(o, dep)
			if err != nil {
				return n, fmt.Errorf("failed to add local dependency '%s': %w", name, err)
			}
		} else {
			ch, err = remoteDependency(ctx, o, dep)
			if err != nil {
				return n, fmt.Errorf("failed to add remote dependency '%s': %w", name, err)
			}
		}
		if dep.Alias != "" {
			ch.Metadata.Name = dep.Alias
		}
		c.AddDependency(ch)
		have[name] = true
		n++
	}
	return n, nil
}

func localDependency(o LocalOptions, dep *helmchart.Dependency) (*helmchart.Chart, error) {
	rel := path.Join(o.Path, "charts", dep.Name)
	if dep.Repository != "" {
		u, err := url.Parse(dep.Repository)
		if err != nil {
			return nil, fmt.Errorf("invalid local chart reference '%s'", dep.Repository)
		}
		rel = path.Join(o.Path, u.Host, u.Path)
	}
	constraint, err := semver.NewConstraint(orStar(dep.Version))
	if err != nil {
		return nil, fmt.Errorf("invalid version/constraint format '%s': %w", dep.Version, err)
	}
	ch, err := loadAt(o.Root, rel, o.Limits)
	if err != nil {
		return nil, err
	}
	v, err := semver.NewVersion(ch.Metadata.Version)
	if err != nil {
		return nil, fmt.Errorf("chart at path '%s' has version '%s', not SemVer", rel, ch.Metadata.Version)
	}
	if !constraint.Check(v) {
		return nil, fmt.Errorf("can't get a valid version for constraint '%s'", dep.Version)
	}
	return ch, nil
}

func remoteDependency(ctx context.Context, o LocalOptions, dep *helmchart.Dependency) (*helmchart.Chart, error) {
	if o.Repositories == nil {
		return nil, fmt.Errorf("no chart repository for URL '%s'", dep.Repository)
	}
	r, err := o.Repositories(ctx, dep.Repository)
	if err != nil {
		return nil, err
	}
	cv, err := r.Select(ctx, dep.Name, dep.Version)
	if err != nil {
		return nil, fmt.Errorf("failed to get chart '%s' version '%s' from '%s': %w", dep.Name, dep.Version, dep.Repository, err)
	}
	data, err := r.Download(ctx, cv)
	if err != nil {
		return nil, fmt.Errorf("chart download of version '%s' failed: %w", cv.Version, err)
	}
	ch, err := LoadArchive(data, o.Limits)
	if err != nil {
		return nil, fmt.Errorf("failed to load downloaded archive of version '%s': %w", cv.Version, err)
	}
	return ch, nil
}

func orStar(v string) string {
	if v == "" {
		return "*"
	}
	return v
}
