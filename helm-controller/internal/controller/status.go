package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/helm-controller/internal/values"
	"github.com/eddyops/eddy/pkg/reconcile"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"
)

// defaultMaxHistory is spec.maxHistory's default and the most snapshots
// status.history keeps. Flux compatible.
const defaultMaxHistory = 5

// releaseName is spec.releaseName, else `[targetNamespace-]name` (before
// shortening). Flux compatible.
func releaseName(obj *helmv2.HelmRelease) string {
	if obj.Spec.ReleaseName != "" {
		return obj.Spec.ReleaseName
	}
	if obj.Spec.TargetNamespace != "" {
		return obj.Spec.TargetNamespace + "-" + obj.Name
	}
	return obj.Name
}

// releaseNamespace is spec.targetNamespace, else the HelmRelease's.
func releaseNamespace(obj *helmv2.HelmRelease) string {
	if obj.Spec.TargetNamespace != "" {
		return obj.Spec.TargetNamespace
	}
	return obj.Namespace
}

// storageNamespace is spec.storageNamespace, else the HelmRelease's.
func storageNamespace(obj *helmv2.HelmRelease) string {
	if obj.Spec.StorageNamespace != "" {
		return obj.Spec.StorageNamespace
	}
	return obj.Namespace
}

func maxHistory(obj *helmv2.HelmRelease) int {
	if obj.Spec.MaxHistory == nil {
		return defaultMaxHistory
	}
	return *obj.Spec.MaxHistory
}

// timeout is spec.timeout, default 5m0s.
func timeout(obj *helmv2.HelmRelease) time.Duration {
	if obj.Spec.Timeout == nil {
		return 5 * time.Minute
	}
	return obj.Spec.Timeout.Duration
}

// actionTimeout is an action's own timeout, else spec.timeout.
func actionTimeout(obj *helmv2.HelmRelease, own *metav1.Duration) time.Duration {
	if own != nil {
		return own.Duration
	}
	return timeout(obj)
}

func installSpec(obj *helmv2.HelmRelease) helmv2.Install {
	if obj.Spec.Install == nil {
		return helmv2.Install{}
	}
	return *obj.Spec.Install
}

func upgradeSpec(obj *helmv2.HelmRelease) helmv2.Upgrade {
	if obj.Spec.Upgrade == nil {
		return helmv2.Upgrade{}
	}
	return *obj.Spec.Upgrade
}

func testSpec(obj *helmv2.HelmRelease) helmv2.Test {
	if obj.Spec.Test == nil {
		return helmv2.Test{}
	}
	return *obj.Spec.Test
}

func rollbackSpec(obj *helmv2.HelmRelease) helmv2.Rollback {
	if obj.Spec.Rollback == nil {
		return helmv2.Rollback{}
	}
	return *obj.Spec.Rollback
}

func uninstallSpec(obj *helmv2.HelmRelease) helmv2.Uninstall {
	if obj.Spec.Uninstall == nil {
		return helmv2.Uninstall{}
	}
	return *obj.Spec.Uninstall
}

// deletionPropagation is uninstall.deletionPropagation, default background.
func deletionPropagation(u helmv2.Uninstall) string {
	if u.DeletionPropagation != nil {
		return *u.DeletionPropagation
	}
	return "background"
}

// remediation is the remediation of an install or upgrade (Flux's
// Remediation interface), read from the spec with Flux's defaults.
type remediation struct {
	action           string // install or upgrade
	retries          int
	ignoreTests      *bool
	remediateLast    bool
	strategy         string // rollback or uninstall
	failureCount     func() int64
	incrementFailure func()
}

func (m *remediation) retriesExhausted() bool {
	return m.retries >= 0 && m.failureCount() > int64(m.retries)
}

func (m *remediation) mustIgnoreTestFailures(def bool) bool {
	if m.ignoreTests == nil {
		return def
	}
	return *m.ignoreTests
}

func installRemediation(obj *helmv2.HelmRelease) *remediation {
	m := &remediation{action: helmv2.ReleaseActionInstall, strategy: helmv2.RemediationStrategyUninstall,
		failureCount: func() int64 { return obj.Status.InstallFailures }, incrementFailure: func() { obj.Status.InstallFailures++ }}
	if r := installSpec(obj).Remediation; r != nil {
		m.retries, m.ignoreTests = r.Retries, r.IgnoreTestFailures
		m.remediateLast = r.RemediateLastFailure != nil && *r.RemediateLastFailure
	}
	return m
}

func upgradeRemediation(obj *helmv2.HelmRelease) *remediation {
	m := &remediation{action: helmv2.ReleaseActionUpgrade, strategy: helmv2.RemediationStrategyRollback,
		failureCount: func() int64 { return obj.Status.UpgradeFailures }, incrementFailure: func() { obj.Status.UpgradeFailures++ }}
	if r := upgradeSpec(obj).Remediation; r != nil {
		m.retries, m.ignoreTests = r.Retries, r.IgnoreTestFailures
		m.remediateLast = r.Retries > 0
		if r.RemediateLastFailure != nil {
			m.remediateLast = *r.RemediateLastFailure
		}
		if r.Strategy != nil {
			m.strategy = *r.Strategy
		}
	}
	return m
}

// activeRemediation is the remediation of status.lastAttemptedReleaseAction;
// nil when none was attempted.
func activeRemediation(obj *helmv2.HelmRelease) *remediation {
	switch obj.Status.LastAttemptedReleaseAction {
	case helmv2.ReleaseActionInstall:
		return installRemediation(obj)
	case helmv2.ReleaseActionUpgrade:
		return upgradeRemediation(obj)
	}
	return nil
}

// activeRetry reports whether the last attempted action has the
// RetryOnFailure strategy, and its retry interval (default 5m).
func activeRetry(obj *helmv2.HelmRelease) (time.Duration, bool) {
	var name string
	var interval *metav1.Duration
	switch obj.Status.LastAttemptedReleaseAction {
	case helmv2.ReleaseActionInstall:
		if s := installSpec(obj).Strategy; s != nil {
			name, interval = s.Name, s.RetryInterval
		}
	case helmv2.ReleaseActionUpgrade:
		if s := upgradeSpec(obj).Strategy; s != nil {
			name, interval = s.Name, s.RetryInterval
		}
	}
	if name != helmv2.ActionStrategyRetryOnFailure {
		return 0, false
	}
	if interval == nil {
		return 5 * time.Minute, true
	}
	return interval.Duration, true
}

func activeRetryInterval(obj *helmv2.HelmRelease) time.Duration {
	d, _ := activeRetry(obj)
	return d
}

func clearFailures(obj *helmv2.HelmRelease) {
	obj.Status.Failures, obj.Status.InstallFailures, obj.Status.UpgradeFailures = 0, 0, 0
}

// mustResetFailures reports a change since the last attempt that makes
// the failure counters moot: generation, chart version or values. Flux
// compatible (internal/action/reset.go).
func mustResetFailures(obj *helmv2.HelmRelease, ch *chart.Chart, configDigest string) bool {
	switch {
	case obj.Status.LastAttemptedGeneration != obj.Generation:
		return true
	case obj.Status.LastAttemptedRevision != ch.Metadata.Version:
		return true
	case obj.Status.LastAttemptedConfigDigest != "" && obj.Status.LastAttemptedConfigDigest != configDigest:
		return true
	}
	return false
}

// releaseTargetChanged reports whether the release the history records is
// no longer the one the spec names: another storage namespace, release
// namespace, release name or (with chartNameChangeStrategy Reinstall, the
// default) chart name. Flux compatible (internal/action ReleaseTargetChanged).
func releaseTargetChanged(obj *helmv2.HelmRelease, chartName string) (string, bool) {
	cur := latestSnapshot(obj)
	switch {
	case obj.Status.StorageNamespace == "" || cur == nil:
		return "", false
	case storageNamespace(obj) != obj.Status.StorageNamespace:
		return "storage namespace", true
	case releaseNamespace(obj) != cur.Namespace:
		return "release namespace", true
	case shortenName(releaseName(obj)) != cur.Name:
		return "release name", true
	case chartName != cur.ChartName && upgradeSpec(obj).ChartNameChangeStrategy != "InPlaceUpdate":
		return "chart name", true
	}
	return "", false
}

// latestSnapshot is the newest snapshot of status.history, nil when empty;
// the history is kept sorted newest first.
func latestSnapshot(obj *helmv2.HelmRelease) *helmv2.Snapshot {
	h := obj.Status.History
	if len(h) == 0 {
		return nil
	}
	sort.SliceStable(h, func(i, j int) bool { return h[i].Version > h[j].Version })
	return &h[0]
}

// previousSnapshot is the newest deployed or superseded snapshot after the
// latest, skipping one with a failed test unless ignoreTests. Flux compatible.
func previousSnapshot(obj *helmv2.HelmRelease, ignoreTests bool) *helmv2.Snapshot {
	if latestSnapshot(obj) == nil {
		return nil
	}
	for i := 1; i < len(obj.Status.History); i++ {
		s := &obj.Status.History[i]
		if s.Status == release.StatusDeployed.String() || s.Status == release.StatusSuperseded.String() {
			if ignoreTests || !hasTestInPhase(s, release.HookPhaseFailed.String()) {
				return s
			}
		}
	}
	return nil
}

// truncateHistory keeps the history up to the previous deployed snapshot
// (see previousSnapshot), else up to defaultMaxHistory. Flux compatible.
func truncateHistory(obj *helmv2.HelmRelease, ignoreTests bool) {
	if latestSnapshot(obj) == nil || len(obj.Status.History) < 2 {
		return
	}
	for i := 1; i < len(obj.Status.History); i++ {
		s := &obj.Status.History[i]
		if s.Status == release.StatusDeployed.String() || s.Status == release.StatusSuperseded.String() {
			if ignoreTests || !hasTestInPhase(s, release.HookPhaseFailed.String()) {
				obj.Status.History = obj.Status.History[:i+1]
				return
			}
		}
	}
	if len(obj.Status.History) > defaultMaxHistory {
		obj.Status.History = obj.Status.History[:defaultMaxHistory]
	}
}

func fullReleaseName(s *helmv2.Snapshot) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s.v%d", s.Namespace, s.Name, s.Version)
}

func versionedChartName(s *helmv2.Snapshot) string {
	if s == nil {
		return ""
	}
	return s.ChartName + "@" + s.ChartVersion
}

// hasBeenTested reports whether the snapshot's test hooks ran: recorded
// and all succeeded, or one failed, or none exist. Flux compatible.
func hasBeenTested(s *helmv2.Snapshot) bool {
	if s == nil || s.TestHooks == nil {
		return false
	}
	hooks := *s.TestHooks
	if len(hooks) == 0 {
		return true
	}
	for _, h := range hooks {
		if h != nil && h.Phase == release.HookPhaseFailed.String() {
			return true
		}
	}
	for _, h := range hooks {
		if h == nil || h.Phase != release.HookPhaseSucceeded.String() {
			return false
		}
	}
	return true
}

func hasTestInPhase(s *helmv2.Snapshot, phase string) bool {
	if s == nil || s.TestHooks == nil {
		return false
	}
	for _, h := range *s.TestHooks {
		if h != nil && h.Phase == phase {
			return true
		}
	}
	return false
}

// observedRls is a release as written to storage during an action.
type observedRls struct {
	rel      *release.Release
	snap     helmv2.Snapshot
	manifest string
	hooks    []*release.Hook
}

// snapshotOf is the status.history entry of rel as stored. Flux
// compatible (release.ObservedToSnapshot).
func snapshotOf(rel *release.Release, ociDigest string) helmv2.Snapshot {
	s := helmv2.Snapshot{APIVersion: "v2", Digest: releaseDigest(rel, ociDigest), Name: rel.Name, Namespace: rel.Namespace,
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

// observeInto returns a storage observer appending each write to *into
// (the latest write of a version replaces the earlier).
func observeInto(into *[]*observedRls, ociDigest string) func(*release.Release) {
	return func(rel *release.Release) {
		o := &observedRls{rel: rel, snap: snapshotOf(rel, ociDigest), manifest: rel.Manifest, hooks: rel.Hooks}
		for i, p := range *into {
			if p.snap.Version == o.snap.Version && p.snap.Name == o.snap.Name {
				(*into)[i] = o
				return
			}
		}
		*into = append(*into, o)
	}
}

// recordObserved records the releases an action wrote in status.history:
// the newest version as a new snapshot (or replacing its own), the others
// replacing the snapshots of the same version. A replaced snapshot keeps
// its ociDigest; a new one gets ociDigest (the chart's OCI digest for an
// install or upgrade, else ""). Flux compatible
// (observedReleases.recordOnObject, mutateOCIDigest).
func recordObserved(obj *helmv2.HelmRelease, observed []*observedRls, action, ociDigest string) {
	if len(observed) == 0 {
		return
	}
	sort.Slice(observed, func(i, j int) bool { return observed[i].snap.Version > observed[j].snap.Version })
	withDigest := func(o *observedRls, digest string) helmv2.Snapshot {
		if o.snap.OCIDigest == digest || o.rel == nil {
			return o.snap
		}
		return snapshotOf(o.rel, digest)
	}
	for i, o := range observed {
		replaced := false
		for j := range obj.Status.History {
			h := &obj.Status.History[j]
			if h.Name == o.snap.Name && h.Namespace == o.snap.Namespace && h.Version == o.snap.Version {
				s := withDigest(o, h.OCIDigest)
				s.Action = h.Action
				if i == 0 && action != "" {
					s.Action = action
				}
				s.TestHooks = h.TestHooks
				*h = s
				replaced = true
				break
			}
		}
		if !replaced && i == 0 {
			s := withDigest(o, ociDigest)
			s.Action = action
			obj.Status.History = append([]helmv2.Snapshot{s}, obj.Status.History...)
		}
	}
	latestSnapshot(obj)
}

// inventoryOf is the inventory of a release: the objects of its manifest
// (namespaced ones without a namespace are in the release namespace) and
// the chart's CRDs, as `<ns>_<name>_<group>_<kind>` ids. Flux compatible.
func inventoryOf(manifest, namespace string, ch *chart.Chart, mapper apimeta.RESTMapper) *kustomizev1.ResourceInventory {
	inv := &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}}
	seen := map[string]bool{}
	add := func(doc string) {
		if strings.TrimSpace(doc) == "" {
			return
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil || u.GetKind() == "" {
			return
		}
		gvk := u.GroupVersionKind()
		ns := u.GetNamespace()
		if ns == "" && mapper != nil {
			if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == apimeta.RESTScopeNameNamespace {
				ns = namespace
			}
		}
		id := ssa.ObjMeta{Namespace: ns, Name: u.GetName(), GroupKind: schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}}.ID()
		if !seen[id] {
			seen[id] = true
			inv.Entries = append(inv.Entries, kustomizev1.ResourceRef{ID: id, Version: gvk.Version})
		}
	}
	for _, doc := range splitYAML(manifest) {
		add(doc)
	}
	if ch != nil {
		for _, crd := range ch.CRDObjects() {
			for _, doc := range splitYAML(string(crd.File.Data)) {
				add(doc)
			}
		}
	}
	sort.Slice(inv.Entries, func(i, j int) bool { return inv.Entries[i].ID < inv.Entries[j].ID })
	return inv
}

func splitYAML(s string) []string {
	var docs []string
	cur := []string{}
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " \t") == "---" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = cur[:0]
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}

// summarize writes Ready from the first of [Remediated, TestSuccess (tests
// enabled and not ignored), Released] present, newest generation first:
// its reason and message, False when it is Remediated; Ready=True removes
// Stalled. TestSuccess is removed when tests are off. It records the
// post-renderer and commonMetadata digests observed. Flux compatible
// (internal/reconcile/release.go summarize).
func summarize(obj *helmv2.HelmRelease) {
	order := []string{helmv2.RemediatedCondition, helmv2.ReleasedCondition}
	ts := testSpec(obj)
	if ts.Enable && !ts.IgnoreFailures {
		order = []string{helmv2.RemediatedCondition, helmv2.TestSuccessCondition, helmv2.ReleasedCondition}
	}
	if !ts.Enable {
		reconcile.RemoveConditions(obj, helmv2.TestSuccessCondition)
	}
	var pick *metav1.Condition
	for _, typ := range order {
		c := apimeta.FindStatusCondition(obj.Status.Conditions, typ)
		if c == nil {
			continue
		}
		if pick == nil || c.ObservedGeneration > pick.ObservedGeneration {
			pick = c
		}
	}
	if pick == nil {
		return
	}
	status := pick.Status
	if pick.Type == helmv2.RemediatedCondition {
		status = metav1.ConditionFalse
	}
	if status == metav1.ConditionTrue {
		reconcile.RemoveConditions(obj, meta.StalledCondition)
	}
	reconcile.SetCondition(obj, meta.ReadyCondition, status, pick.Reason, pick.Message)
	// The digests the release was last acted on with (Flux does it here).
	obj.Status.ObservedPostRenderersDigest = postrender.PostRenderersDigest(obj)
	obj.Status.ObservedCommonMetadataDigest = postrender.CommonMetadataDigest(obj)
}

// eventMeta is the metadata of a release event: chart version, values
// digest, app version and the chart's OCI digest (OCI sources). Flux
// compatible keys.
func eventMeta(version, configDigest, appVersion, ociDigest string) map[string]string {
	m := map[string]string{}
	g := helmv2.GroupVersion.Group
	if version != "" {
		m[g+"/revision"] = version
	}
	if configDigest != "" {
		m[g+"/token"] = configDigest
	}
	if appVersion != "" {
		m[g+"/app-version"] = appVersion
	}
	if ociDigest != "" {
		m[g+"/oci-digest"] = ociDigest
	}
	return m
}

func (r *HelmReleaseReconciler) snapshotMeta(s *helmv2.Snapshot) map[string]string {
	if s == nil {
		return nil
	}
	return eventMeta(s.ChartVersion, s.ConfigDigest, s.AppVersion, s.OCIDigest)
}

// helmLog sends Helm's debug lines to the reconcile's logger at debug level.
func helmLog(ctx context.Context) func(string, ...any) {
	log := ctrl.LoggerFrom(ctx).V(1)
	return func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
}

// driftMode is spec.driftDetection.mode, default disabled.
func driftMode(obj *helmv2.HelmRelease) string {
	if obj.Spec.DriftDetection == nil || obj.Spec.DriftDetection.Mode == "" {
		return helmv2.DriftDetectionDisabled
	}
	return obj.Spec.DriftDetection.Mode
}
