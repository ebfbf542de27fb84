package release

import (
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/values"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotOf is the status.history entry of rel as stored, its chart's OCI
// digest ociDigest ("" for a chart from a HelmChart). Action and test hooks
// are left for the caller. Flux compatible (release.ObservedToSnapshot).
func SnapshotOf(rel *helmrelease.Release, ociDigest string) helmv2.Snapshot {
	s := helmv2.Snapshot{APIVersion: "v2", Digest: Digest(rel, ociDigest), Name: rel.Name, Namespace: rel.Namespace,
		Version: rel.Version, ConfigDigest: values.Digest(rel.Config), OCIDigest: ociDigest}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		s.ChartName, s.ChartVersion, s.AppVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, rel.Chart.Metadata.AppVersion
	}
	if rel.Info != nil {
		s.Status = rel.Info.Status.String()
		s.FirstDeployed = metav1.NewTime(rel.Info.FirstDeployed.Time)
		s.LastDeployed = metav1.NewTime(rel.Info.LastDeployed.Time)
		s.Deleted = metav1.NewTime(rel.Info.Deleted.Time)
	}
	return s
}

// FullNameOf is `<namespace>/<name>.v<version>` of rls.
func FullNameOf(rls *helmrelease.Release) string {
	return fmt.Sprintf("%s/%s.v%d", rls.Namespace, rls.Name, rls.Version)
}

// ChartNameOf is `<chart>@<version>` of rls's chart, "" without one.
func ChartNameOf(rls *helmrelease.Release) string {
	if rls.Chart == nil || rls.Chart.Metadata == nil {
		return ""
	}
	return rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version
}

// FullName is `<namespace>/<name>.v<version>` of s, "" for nil.
func FullName(s *helmv2.Snapshot) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s.v%d", s.Namespace, s.Name, s.Version)
}

// VersionedChartName is `<chart>@<version>` of s, "" for nil.
func VersionedChartName(s *helmv2.Snapshot) string {
	if s == nil {
		return ""
	}
	return s.ChartName + "@" + s.ChartVersion
}

// HasBeenTested reports whether the snapshot's test hooks ran: recorded
// and all succeeded, or one failed, or none exist. Flux compatible.
func HasBeenTested(s *helmv2.Snapshot) bool {
	if s == nil || s.TestHooks == nil {
		return false
	}
	hooks := *s.TestHooks
	if len(hooks) == 0 {
		return true
	}
	if HasFailedTest(s) {
		return true
	}
	for _, h := range hooks {
		if h == nil || h.Phase != helmrelease.HookPhaseSucceeded.String() {
			return false
		}
	}
	return true
}

// HasFailedTest reports whether a recorded test hook of s is in phase
// Failed.
func HasFailedTest(s *helmv2.Snapshot) bool {
	if s == nil || s.TestHooks == nil {
		return false
	}
	for _, h := range *s.TestHooks {
		if h != nil && h.Phase == helmrelease.HookPhaseFailed.String() {
			return true
		}
	}
	return false
}

// TestHooks are the test hooks of rel selected by filters (spec.test.filters),
// by name, with their last run (nil when never run). Flux compatible
// (release.TestHooksFromRelease).
func TestHooks(rel *helmrelease.Release, filters []helmv2.Filter) map[string]*helmv2.TestHookStatus {
	out := map[string]*helmv2.TestHookStatus{}
	for _, h := range rel.Hooks {
		if h == nil || !IsTestHook(h) || !TestSelected(h.Name, filters) {
			continue
		}
		var st *helmv2.TestHookStatus
		if !h.LastRun.StartedAt.IsZero() {
			st = &helmv2.TestHookStatus{LastStarted: metav1.NewTime(h.LastRun.StartedAt.Time),
				LastCompleted: metav1.NewTime(h.LastRun.CompletedAt.Time), Phase: h.LastRun.Phase.String()}
		}
		out[h.Name] = st
	}
	return out
}

// TestSelected reports whether the test hook name runs under filters: not
// excluded, and included when any filter includes. Flux compatible.
func TestSelected(name string, filters []helmv2.Filter) bool {
	include, included := false, false
	for _, f := range filters {
		if f.Exclude {
			if f.Name == name {
				return false
			}
			continue
		}
		include = true
		if f.Name == name {
			included = true
		}
	}
	return !include || included
}
