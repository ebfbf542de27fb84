package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/drift"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	helmrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// releaseStep installs (name install) or upgrades (name upgrade) the
// release to the chart and values; an install starts a new history. A
// failure that stored a release counts for the action's remediation; one
// that stored nothing is returned, to be retried. Flux compatible
// (internal/reconcile/install.go, upgrade.go).
func (r *HelmReleaseReconciler) releaseStep(req *releaseRequest, name string) *releaseAction {
	obj := req.obj
	own, run := action.InstallSpec(obj).Timeout, action.Install
	if name == helmv2.ReleaseActionUpgrade {
		own, run = action.UpgradeSpec(obj).Timeout, action.Upgrade
	}
	return &releaseAction{name: name, kind: kindRelease, timeout: action.TimeoutOf(obj, own), run: func(ctx context.Context) error {
		var observed []*release.Observed
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, release.ObserveInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		obj.Status.LastAttemptedReleaseAction = name
		if name == helmv2.ReleaseActionInstall {
			obj.Status.History = nil
		}
		reconciler.RemoveConditions(obj, helmv2.TestSuccessCondition, helmv2.RemediatedCondition)
		start := time.Now()
		_, err = run(ctx, cfg, obj, req.chart, req.values)
		return r.released(req, name, start, observed, logs, err)
	}}
}

// released records the outcome of an install or upgrade (name) started
// at start: duration, history, inventory, Released (and TestSuccess
// awaiting tests), the event and Ready. A failure that stored a release
// counts for the action's remediation; one that stored nothing is
// returned, to be retried. Flux compatible (install.go, upgrade.go).
func (r *HelmReleaseReconciler) released(req *releaseRequest, name string, start time.Time, observed []*release.Observed,
	logs *logBuffer, err error) error {
	obj := req.obj
	obj.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: time.Since(start)}
	obj.Status.History = release.Record(obj.Status.History, observed, name, obj.Status.LastAttemptedRevisionDigest)
	r.recordInventory(req, observed)
	defer summarize(obj)
	failReason, failFmt, okReason, okFmt, m := helmv2.InstallFailedReason, fmtInstallFailure, helmv2.InstallSucceededReason, fmtInstallSuccess, installRemediation(obj)
	if name == helmv2.ReleaseActionUpgrade {
		failReason, failFmt, okReason, okFmt, m = helmv2.UpgradeFailedReason, fmtUpgradeFailure, helmv2.UpgradeSucceededReason, fmtUpgradeSuccess, upgradeRemediation(obj)
	}
	if cause := canceledBy(req.waitCtx); err != nil && cause != nil {
		// A newer desired state cut the wait: not a failure of this
		// release to remediate; the next reconcile upgrades from it.
		reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, meta.HealthCheckCanceledReason, cause.Error())
		reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, meta.HealthCheckCanceledReason, cause.Error())
		r.Events.Event(obj, corev1.EventTypeNormal, meta.HealthCheckCanceledReason, cause.Error(),
			eventMeta(req.chart.Metadata.Version, req.configDigest, req.chart.AppVersion(), obj.Status.LastAttemptedRevisionDigest))
		return errMustRequeue
	}
	if err != nil {
		msg := fmt.Sprintf(failFmt, release.Namespace(obj), release.Name(obj), req.chart.Name(), req.chart.Metadata.Version,
			strings.TrimSpace(req.secrets.Redact(err.Error())))
		obj.Status.Failures++
		reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, failReason, msg)
		r.Events.Event(obj, corev1.EventTypeWarning, failReason, req.secrets.Redact(logs.withLogs(msg)),
			eventMeta(req.chart.Metadata.Version, req.configDigest, req.chart.AppVersion(), obj.Status.LastAttemptedRevisionDigest))
		if len(observed) == 0 {
			return errors.New(msg)
		}
		m.incrementFailure()
		return nil
	}
	cur := release.Latest(obj.Status.History)
	msg := fmt.Sprintf(okFmt, release.FullName(cur), release.VersionedChartName(cur))
	reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, okReason, msg)
	if action.TestSpec(obj).Enable && !release.HasBeenTested(cur) {
		reconciler.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionUnknown, helmv2.AwaitingTestsReason,
			fmt.Sprintf(fmtTestPending, release.FullName(cur), release.VersionedChartName(cur)))
	}
	if _, ok := activeRetry(obj); ok {
		clearFailures(obj)
	}
	r.Events.Event(obj, corev1.EventTypeNormal, okReason, msg, r.snapshotMeta(cur))
	return nil
}

// recordInventory sets status.inventory from the newest observed release.
func (r *HelmReleaseReconciler) recordInventory(req *releaseRequest, observed []*release.Observed) {
	newest := release.Newest(observed)
	if newest == nil {
		return
	}
	mapper, _ := req.getter.ToRESTMapper()
	req.obj.Status.Inventory = release.Inventory(newest.Manifest, newest.Snapshot.Namespace, req.chart, mapper)
}

// testAction runs the release's test hooks (spec.test.filters applied) and
// records their outcome on the latest snapshot. Flux compatible
// (internal/reconcile/test.go).
func (r *HelmReleaseReconciler) testAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	spec := action.TestSpec(obj)
	return &releaseAction{name: "test", kind: kindTest, timeout: action.TimeoutOf(obj, spec.Timeout), run: func(ctx context.Context) error {
		cur := release.Latest(obj.Status.History)
		if cur == nil {
			return errors.New("no latest release: required for test")
		}
		filters := action.TestFilters(obj)
		observe := func(rel *helmrelease.Release) {
			latest := release.Latest(obj.Status.History)
			if latest == nil || latest.Name != rel.Name || latest.Namespace != rel.Namespace || latest.Version != rel.Version {
				return
			}
			tested := release.SnapshotOf(rel, latest.OCIDigest)
			tested.Action = latest.Action
			hooks := release.TestHooks(rel, filters)
			tested.TestHooks = &hooks
			*latest = tested
		}
		cfg, err := r.helmConfig(ctx, req, observe)
		if err != nil {
			return err
		}
		rls, err := action.Test(cfg, obj, cur.Name)
		if err == nil && rls != nil && (rls.Name != cur.Name || rls.Version != cur.Version) {
			err = fmt.Errorf("release mismatch: tested release %s/%s.v%d != current release %s", rls.Namespace, rls.Name, rls.Version, release.FullName(cur))
		}
		defer summarize(obj)
		cur = release.Latest(obj.Status.History)
		if err != nil {
			msg := fmt.Sprintf(fmtTestFailure, release.FullName(cur), release.VersionedChartName(cur), strings.TrimSpace(req.secrets.Redact(err.Error())))
			obj.Status.Failures++
			reconciler.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionFalse, helmv2.TestFailedReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.TestFailedReason, msg, r.snapshotMeta(cur))
			if release.HasBeenTested(cur) {
				if m := activeRemediation(obj); m != nil && !m.mustIgnoreTestFailures(spec.IgnoreFailures) {
					m.incrementFailure()
				}
				return nil
			}
			return errors.New(msg)
		}
		hookMsg := "no test hooks"
		if cur.TestHooks != nil {
			if n := len(*cur.TestHooks); n == 1 {
				hookMsg = "1 test hook completed successfully"
			} else if n > 1 {
				hookMsg = fmt.Sprintf("%d test hooks completed successfully", n)
			}
		}
		msg := fmt.Sprintf(fmtTestSuccess, release.FullName(cur), release.VersionedChartName(cur), hookMsg)
		reconciler.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionTrue, helmv2.TestSucceededReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.TestSucceededReason, msg, r.snapshotMeta(cur))
		return nil
	}}
}

// rollbackAction rolls the release back to prev. Flux compatible
// (internal/reconcile/rollback_remediation.go).
func (r *HelmReleaseReconciler) rollbackAction(req *releaseRequest, prev helmv2.Snapshot) *releaseAction {
	obj := req.obj
	to := action.TimeoutOf(obj, action.RollbackSpec(obj).Timeout)
	return &releaseAction{name: "rollback", kind: kindRemediate, timeout: to, run: func(ctx context.Context) error {
		var observed []*release.Observed
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, release.ObserveInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		before := release.Latest(obj.Status.History).Digest
		err = action.Rollback(cfg, obj, prev.Name, prev.Version)
		obj.Status.History = release.Record(obj.Status.History, observed, helmv2.ReleaseActionRollback, "")
		r.recordInventory(req, observed)
		defer summarize(obj)
		return r.remediated(req, &prev, before, logs, err, rollbackMessages)
	}}
}

// uninstallRemediationAction uninstalls a failed release. Flux compatible
// (internal/reconcile/uninstall_remediation.go).
func (r *HelmReleaseReconciler) uninstallRemediationAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	to := action.TimeoutOf(obj, action.UninstallSpec(obj).Timeout)
	return &releaseAction{name: "uninstall", kind: kindRemediate, timeout: to, run: func(ctx context.Context) error {
		var observed []*release.Observed
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, release.ObserveInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		cur := release.Latest(obj.Status.History)
		if cur == nil {
			return errors.New("no latest release: required to remediate")
		}
		before := cur.Digest
		err = action.Uninstall(cfg, obj, cur.Name)
		obj.Status.History = release.Record(obj.Status.History, observed, "", "")
		defer summarize(obj)
		return r.remediated(req, release.Latest(obj.Status.History), before, logs, err, uninstallRemediationMessages)
	}}
}

// remediationMessages are the reasons and message formats of a
// remediation's success and failure.
type remediationMessages struct{ okReason, okFmt, failReason, failFmt string }

var (
	rollbackMessages = remediationMessages{helmv2.RollbackSucceededReason, fmtRollbackSuccess,
		helmv2.RollbackFailedReason, fmtRollbackFailure}
	uninstallRemediationMessages = remediationMessages{helmv2.UninstallSucceededReason, fmtUninstallRemediationOK,
		helmv2.UninstallFailedReason, fmtUninstallRemediationFail}
)

// remediated records the outcome err of a remediation of release s:
// Remediated and its event, with Helm's last log lines on failure. A
// failure that left the latest snapshot as it was before (its digest) is
// returned, to be retried; one that changed the release counts as done.
// Flux compatible (rollback_remediation.go, uninstall_remediation.go).
func (r *HelmReleaseReconciler) remediated(req *releaseRequest, s *helmv2.Snapshot, before string, logs *logBuffer, err error,
	m remediationMessages) error {
	obj := req.obj
	if err != nil {
		msg := fmt.Sprintf(m.failFmt, release.FullName(s), release.VersionedChartName(s), strings.TrimSpace(req.secrets.Redact(err.Error())))
		obj.Status.Failures++
		reconciler.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionFalse, m.failReason, msg)
		r.Events.Event(obj, corev1.EventTypeWarning, m.failReason, req.secrets.Redact(logs.withLogs(msg)), r.snapshotMeta(s))
		if cur := release.Latest(obj.Status.History); cur == nil || cur.Digest == before {
			return errors.New(msg)
		}
		return nil
	}
	msg := fmt.Sprintf(m.okFmt, release.FullName(s), release.VersionedChartName(s))
	reconciler.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionTrue, m.okReason, msg)
	r.Events.Event(obj, corev1.EventTypeNormal, m.okReason, msg, r.snapshotMeta(s))
	return nil
}

// unlockAction marks a release left pending (a controller stopped during
// an action) failed, so the state machine can act on it. Flux compatible
// (internal/reconcile/unlock.go): Released=False PendingRelease.
func (r *HelmReleaseReconciler) unlockAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	return &releaseAction{name: "unlock", kind: kindUnlock, timeout: action.Timeout(obj), run: func(ctx context.Context) error {
		var observed []*release.Observed
		cfg, err := r.helmConfig(ctx, req, release.ObserveInto(&observed, ""))
		if err != nil {
			return err
		}
		rls, status, err := action.Unlock(cfg, release.ShortName(obj))
		if rls == nil { // not pending, or storage not read
			return err
		}
		obj.Status.History = release.Record(obj.Status.History, observed, "", "")
		defer summarize(obj)
		full, chartName := release.FullNameOf(rls), release.ChartNameOf(rls)
		if err != nil {
			msg := fmt.Sprintf(fmtUnlockFailure, full, chartName, status, err)
			obj.Status.Failures++
			reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, helmv2.PendingReleaseReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.PendingReleaseReason, msg, nil)
			return errors.New(msg)
		}
		msg := fmt.Sprintf(fmtUnlockSuccess, full, chartName, status)
		reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, helmv2.PendingReleaseReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.PendingReleaseReason, msg, r.snapshotMeta(release.Latest(obj.Status.History)))
		return nil
	}}
}

// correctDriftAction makes the cluster match the release where report
// found drift (internal/drift: Create for missing objects, JSON patch for
// changed ones) and reports it: Normal DriftCorrected "Cluster state of
// release <rel> has been corrected:\n<changes>", or Warning
// DriftCorrectionFailed "Failed to [partially ]correct cluster state of
// release <rel>:\n<errors>". Flux compatible (correct_cluster_drift.go).
func (r *HelmReleaseReconciler) correctDriftAction(req *releaseRequest, report *drift.Report) *releaseAction {
	obj := req.obj
	return &releaseAction{name: "correct cluster drift", kind: kindDriftCorrection, timeout: action.Timeout(obj), run: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, action.Timeout(obj))
		defer cancel()
		c, err := req.getter.client()
		if err != nil {
			return err
		}
		changes, err := drift.Correct(ctx, c, report)
		cur := release.Latest(obj.Status.History)
		switch {
		case err != nil:
			var b strings.Builder
			b.WriteString("Failed to ")
			if changes != "" {
				b.WriteString("partially ")
			}
			b.WriteString("correct cluster state of release " + release.FullName(cur) + ":\n" + err.Error())
			if changes != "" {
				b.WriteString("\n\nSuccessful corrections:\n" + changes)
			}
			r.Events.Event(obj, corev1.EventTypeWarning, "DriftCorrectionFailed", req.secrets.Redact(b.String()), r.snapshotMeta(cur))
		case changes != "":
			r.Events.Event(obj, corev1.EventTypeNormal, "DriftCorrected",
				req.secrets.Redact(fmt.Sprintf("Cluster state of release %s has been corrected:\n%s", release.FullName(cur), changes)), r.snapshotMeta(cur))
		}
		return nil
	}}
}
