// Package chart builds the Helm chart artifacts of HelmChart objects: it
// packages a chart directory of a source artifact (with its dependencies and
// merged values files), or pulls a chart version from an HTTP chart
// repository index or an OCI registry. Archives and directories are loaded
// under size limits and path rules, so a hostile chart yields an error, not
// a panic or a file outside the work directory.
//
// Flux compatible: the build summary, the error reasons and the version
// rules are those of source-controller's internal/helm/chart (contract §1.4,
// flux-contract-2.10 §2.2).
package chart

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// Limits bound what is loaded from a chart, in bytes.
type Limits struct {
	// MaxChartSize bounds a chart archive (compressed) and the sum of a
	// chart directory's files (--helm-chart-max-size, Flux: 10 MiB).
	MaxChartSize int64
	// MaxFileSize bounds each file of a chart (--helm-chart-file-max-size,
	// Flux: 5 MiB).
	MaxFileSize int64
}

// DefaultLimits are Flux's defaults: 10 MiB per chart, 5 MiB per file.
var DefaultLimits = Limits{MaxChartSize: 10 << 20, MaxFileSize: 5 << 20}

func (l Limits) orDefault() Limits {
	if l.MaxChartSize <= 0 {
		l.MaxChartSize = DefaultLimits.MaxChartSize
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultLimits.MaxFileSize
	}
	return l
}

// Build is the outcome of a chart build.
type Build struct {
	// Name and Version are the chart's, Version with any build metadata.
	Name, Version string
	// Data is the chart archive (.tgz); nil when Cached.
	Data []byte
	// Cached is true when the stored artifact already is this build.
	Cached bool
	// Packaged is true when the chart was packaged (source chart directory,
	// merged values or version metadata), false when pulled as it is.
	Packaged bool
	// ValuesFiles are the values files merged into the chart's values.yaml.
	ValuesFiles []string
	// ResolvedDependencies counts the dependencies added to the chart.
	ResolvedDependencies int
	// Verified is true when RemoteOptions.Verify accepted the selected
	// version's signature.
	Verified bool
}

// Summary is the Ready message and NewArtifact event of the build, Flux's
// wording: "packaged|pulled '<name>' chart with version '<version>'", plus
// " and merged values files [a b]" when values files were merged.
func (b *Build) Summary() string {
	action := "pulled"
	if b.Packaged {
		action = "packaged"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s '%s' chart with version '%s'", action, b.Name, b.Version)
	if len(b.ValuesFiles) > 0 {
		fmt.Fprintf(&s, " and merged values files %v", b.ValuesFiles)
	}
	return s.String()
}

// Reason returns the Ready reason of a successful build: ChartPackageSucceeded
// or ChartPullSucceeded.
func (b *Build) Reason() string {
	if b.Packaged {
		return sourcev1.ChartPackageSucceededReason
	}
	return sourcev1.ChartPullSucceededReason
}

// Kind classifies a build failure; Reason is the condition reason and
// Summary prefixes the message (Flux's BuildErrorReason).
type Kind struct {
	Reason, Summary string
	// Persistent kinds need a spec change: the object is Stalled.
	Persistent bool
	// Build kinds set BuildFailed; the others FetchFailed.
	Build bool
}

// The failure kinds, Flux's reasons and summaries.
var (
	ErrChartReference = Kind{Reason: sourcev1.InvalidChartReferenceReason, Summary: "invalid chart reference", Persistent: true}
	ErrChartPull      = Kind{Reason: sourcev1.ChartPullErrorReason, Summary: "chart pull error"}
	ErrMetadataPatch  = Kind{Reason: sourcev1.MetadataPatchErrorReason, Summary: "chart metadata patch error", Persistent: true, Build: true}
	ErrValuesFiles    = Kind{Reason: sourcev1.ValuesFilesErrorReason, Summary: "values files merge error", Persistent: true, Build: true}
	ErrDependency     = Kind{Reason: sourcev1.DependencyBuildErrorReason, Summary: "dependency build error", Build: true}
	ErrChartPackage   = Kind{Reason: sourcev1.ChartPackageErrorReason, Summary: "chart package error", Build: true}
	ErrVerification   = Kind{Reason: "ChartVerificationError", Summary: "chart verification error", Build: true}
)

// BuildError is a failed build: "<kind summary>: <cause>".
type BuildError struct {
	Kind Kind
	Err  error
}

func (e *BuildError) Error() string { return e.Kind.Summary + ": " + e.Err.Error() }

func (e *BuildError) Unwrap() error { return e.Err }

func fail(k Kind, format string, args ...any) *BuildError {
	return &BuildError{Kind: k, Err: fmt.Errorf(format, args...)}
}

// withMetadata returns version with its SemVer build metadata replaced by
// metadata (unchanged when metadata is empty).
func withMetadata(version, metadata string) (string, error) {
	if metadata == "" {
		return version, nil
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return "", fail(ErrMetadataPatch, "failed to parse version '%s' as SemVer: %s", version, err)
	}
	nv, err := v.SetMetadata(metadata)
	if err != nil {
		return "", fail(ErrMetadataPatch, "failed to set SemVer metadata on chart version: %s", err)
	}
	return nv.String(), nil
}
