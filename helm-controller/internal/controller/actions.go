package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/drift"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/pkg/reconcile"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// installAction installs the chart. A failure that stored a release counts
// as an install failure (remediation follows); one that stored nothing is
// returned, to be retried. Flux compatible (internal/reconcile/install.go).
func (r *HelmReleaseReconciler) installAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	spec := installSpec(obj)
	to := actionTimeout(obj, spec.Timeout)
	return &releaseAction{name: "install", kind: kindRelease, timeout: to, run: func(ctx context.Context) error {
		var observed []*observedRls
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, observeInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		obj.Status.LastAttemptedReleaseAction = helmv2.ReleaseActionInstall
		obj.Status.History = nil
		reconcile.RemoveConditions(obj, helmv2.TestSuccessCondition, helmv2.RemediatedCondition)
		in := action.NewInstall(cfg)
		in.ReleaseName = shortenName(releaseName(obj))
		in.Namespace = releaseNamespace(obj)
		in.Timeout = to
		in.Wait = !spec.DisableWait
		in.WaitForJobs = !spec.DisableWaitForJobs
		in.DisableHooks = spec.DisableHooks
		in.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
		in.SkipSchemaValidation = spec.DisableSchemaValidation
		in.Replace = spec.Replace
		in.CreateNamespace = spec.CreateNamespace
		in.TakeOwnership = !spec.DisableTakeOwnership
		in.SkipCRDs = spec.SkipCRDs || spec.CRDs == helmv2.CRDsSkip
		in.PostRenderer = postrender.Build(obj)
		start := time.Now()
		_, err = in.RunWithContext(ctx, req.chart, req.values)
		return r.released(req, helmv2.ReleaseActionInstall, start, observed, logs, err)
	}}
}

// upgradeAction upgrades the release to the chart and values. Flux
// compatible (internal/reconcile/upgrade.go).
func (r *HelmReleaseReconciler) upgradeAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	spec := upgradeSpec(obj)
	to := actionTimeout(obj, spec.Timeout)
	return &releaseAction{name: "upgrade", kind: kindRelease, timeout: to, run: func(ctx context.Context) error {
		var observed []*observedRls
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, observeInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		obj.Status.LastAttemptedReleaseAction = helmv2.ReleaseActionUpgrade
		reconcile.RemoveConditions(obj, helmv2.TestSuccessCondition, helmv2.RemediatedCondition)
		up := action.NewUpgrade(cfg)
		up.Namespace = releaseNamespace(obj)
		up.Timeout = to
		up.Wait = !spec.DisableWait
		up.WaitForJobs = !spec.DisableWaitForJobs
		up.DisableHooks = spec.DisableHooks
		up.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
		up.SkipSchemaValidation = spec.DisableSchemaValidation
		up.Force = spec.Force
		up.CleanupOnFail = spec.CleanupOnFail
		up.ReuseValues = spec.PreserveValues
		up.ResetValues = !spec.PreserveValues
		up.MaxHistory = maxHistory(obj)
		up.TakeOwnership = !spec.DisableTakeOwnership
		up.SkipCRDs = spec.CRDs == "" || spec.CRDs == helmv2.CRDsSkip
		up.PostRenderer = postrender.Build(obj)
		start := time.Now()
		_, err = up.RunWithContext(ctx, shortenName(releaseName(obj)), req.chart, req.values)
		return r.released(req, helmv2.ReleaseActionUpgrade, start, observed, logs, err)
	}}
}

// released records the outcome of an install or upgrade (action) started
// at start: duration, history, inventory, Released (and TestSuccess
// awaiting tests), the event and Ready. A failure that stored a release
// counts for the action's remediation; one that stored nothing is
// returned, to be retried. Flux compatible (install.go, upgrade.go).
func (r *HelmReleaseReconciler) released(req *releaseRequest, action string, start time.Time, observed []*observedRls,
	logs *logBuffer, err error) error {
	obj := req.obj
	obj.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: time.Since(start)}
	recordObserved(obj, observed, action, obj.Status.LastAttemptedRevisionDigest)
	r.recordInventory(req, observed)
	defer summarize(obj)
	failReason, failFmt, okReason, okFmt, m := helmv2.InstallFailedReason, fmtInstallFailure, helmv2.InstallSucceededReason, fmtInstallSuccess, installRemediation(obj)
	if action == helmv2.ReleaseActionUpgrade {
		failReason, failFmt, okReason, okFmt, m = helmv2.UpgradeFailedReason, fmtUpgradeFailure, helmv2.UpgradeSucceededReason, fmtUpgradeSuccess, upgradeRemediation(obj)
	}
	if cause := canceledBy(req.waitCtx); err != nil && cause != nil {
		// A newer desired state cut the wait: not a failure of this
		// release to remediate; the next reconcile upgrades from it.
		reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, meta.HealthCheckCanceledReason, cause.Error())
		reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, meta.HealthCheckCanceledReason, cause.Error())
		r.Events.Event(obj, corev1.EventTypeNormal, meta.HealthCheckCanceledReason, cause.Error(),
			eventMeta(req.chart.Metadata.Version, req.configDigest, req.chart.AppVersion(), obj.Status.LastAttemptedRevisionDigest))
		return errMustRequeue
	}
	if err != nil {
		msg := fmt.Sprintf(failFmt, releaseNamespace(obj), releaseName(obj), req.chart.Name(), req.chart.Metadata.Version,
			strings.TrimSpace(req.secrets.Redact(err.Error())))
		obj.Status.Failures++
		reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, failReason, msg)
		r.Events.Event(obj, corev1.EventTypeWarning, failReason, req.secrets.Redact(logs.withLogs(msg)),
			eventMeta(req.chart.Metadata.Version, req.configDigest, req.chart.AppVersion(), obj.Status.LastAttemptedRevisionDigest))
		if len(observed) == 0 {
			return errors.New(msg)
		}
		m.incrementFailure()
		return nil
	}
	cur := latestSnapshot(obj)
	msg := fmt.Sprintf(okFmt, fullReleaseName(cur), versionedChartName(cur))
	reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, okReason, msg)
	if testSpec(obj).Enable && !hasBeenTested(cur) {
		reconcile.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionUnknown, helmv2.AwaitingTestsReason,
			fmt.Sprintf(fmtTestPending, fullReleaseName(cur), versionedChartName(cur)))
	}
	if _, ok := activeRetry(obj); ok {
		clearFailures(obj)
	}
	r.Events.Event(obj, corev1.EventTypeNormal, okReason, msg, r.snapshotMeta(cur))
	return nil
}

// testAction runs the release's test hooks (spec.test.filters applied) and
// records their outcome on the latest snapshot. Flux compatible
// (internal/reconcile/test.go).
func (r *HelmReleaseReconciler) testAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	spec := testSpec(obj)
	to := actionTimeout(obj, spec.Timeout)
	return &releaseAction{name: "test", kind: kindTest, timeout: to, run: func(ctx context.Context) error {
		cur := latestSnapshot(obj)
		if cur == nil {
			return errors.New("no latest release: required for test")
		}
		var filters []helmv2.Filter
		if spec.Filters != nil {
			filters = *spec.Filters
		}
		observe := func(rel *release.Release) {
			latest := latestSnapshot(obj)
			if latest == nil || latest.Name != rel.Name || latest.Namespace != rel.Namespace || latest.Version != rel.Version {
				return
			}
			tested := snapshotOf(rel, latest.OCIDigest)
			tested.Action = latest.Action
			hooks := testHooks(rel, filters)
			tested.TestHooks = &hooks
			*latest = tested
		}
		cfg, err := r.helmConfig(ctx, req, observe)
		if err != nil {
			return err
		}
		t := action.NewReleaseTesting(cfg)
		t.Namespace = releaseNamespace(obj)
		t.Timeout = to
		t.Filters = map[string][]string{}
		for _, f := range filters {
			if f.Exclude {
				t.Filters["!name"] = append(t.Filters["!name"], f.Name)
			} else {
				t.Filters["name"] = append(t.Filters["name"], f.Name)
			}
		}
		rls, err := t.Run(cur.Name)
		if err == nil && rls != nil && (rls.Name != cur.Name || rls.Version != cur.Version) {
			err = fmt.Errorf("release mismatch: tested release %s/%s.v%d != current release %s", rls.Namespace, rls.Name, rls.Version, fullReleaseName(cur))
		}
		defer summarize(obj)
		cur = latestSnapshot(obj)
		if err != nil {
			msg := fmt.Sprintf(fmtTestFailure, fullReleaseName(cur), versionedChartName(cur), strings.TrimSpace(req.secrets.Redact(err.Error())))
			obj.Status.Failures++
			reconcile.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionFalse, helmv2.TestFailedReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.TestFailedReason, msg, r.snapshotMeta(cur))
			if hasBeenTested(cur) {
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
		msg := fmt.Sprintf(fmtTestSuccess, fullReleaseName(cur), versionedChartName(cur), hookMsg)
		reconcile.SetCondition(obj, helmv2.TestSuccessCondition, metav1.ConditionTrue, helmv2.TestSucceededReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.TestSucceededReason, msg, r.snapshotMeta(cur))
		return nil
	}}
}

// testHooks are the test hooks of rel selected by filters, with their last
// run. Flux compatible (release.TestHooksFromRelease).
func testHooks(rel *release.Release, filters []helmv2.Filter) map[string]*helmv2.TestHookStatus {
	out := map[string]*helmv2.TestHookStatus{}
	for _, h := range rel.Hooks {
		if h == nil || !isTestHook(h) || !testSelected(h.Name, filters) {
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

func testSelected(name string, filters []helmv2.Filter) bool {
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

// rollbackAction rolls the release back to prev. Flux compatible
// (internal/reconcile/rollback_remediation.go).
func (r *HelmReleaseReconciler) rollbackAction(req *releaseRequest, prev helmv2.Snapshot) *releaseAction {
	obj := req.obj
	spec := rollbackSpec(obj)
	to := actionTimeout(obj, spec.Timeout)
	return &releaseAction{name: "rollback", kind: kindRemediate, timeout: to, run: func(ctx context.Context) error {
		var observed []*observedRls
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, observeInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		before := latestSnapshot(obj).Digest
		rb := action.NewRollback(cfg)
		rb.Version = prev.Version
		rb.Timeout = to
		rb.Wait = !spec.DisableWait
		rb.WaitForJobs = !spec.DisableWaitForJobs
		rb.DisableHooks = spec.DisableHooks
		rb.Force = spec.Force
		rb.CleanupOnFail = spec.CleanupOnFail
		rb.MaxHistory = maxHistory(obj)
		err = rb.Run(prev.Name)
		recordObserved(obj, observed, helmv2.ReleaseActionRollback, "")
		r.recordInventory(req, observed)
		defer summarize(obj)
		if err != nil {
			msg := fmt.Sprintf(fmtRollbackFailure, fullReleaseName(&prev), versionedChartName(&prev), strings.TrimSpace(req.secrets.Redact(err.Error())))
			obj.Status.Failures++
			reconcile.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionFalse, helmv2.RollbackFailedReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.RollbackFailedReason, req.secrets.Redact(logs.withLogs(msg)), r.snapshotMeta(&prev))
			if cur := latestSnapshot(obj); cur == nil || cur.Digest == before {
				return errors.New(msg)
			}
			return nil
		}
		msg := fmt.Sprintf(fmtRollbackSuccess, fullReleaseName(&prev), versionedChartName(&prev))
		reconcile.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionTrue, helmv2.RollbackSucceededReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.RollbackSucceededReason, msg, r.snapshotMeta(&prev))
		return nil
	}}
}

// uninstallRemediationAction uninstalls a failed release. Flux compatible
// (internal/reconcile/uninstall_remediation.go).
func (r *HelmReleaseReconciler) uninstallRemediationAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	spec := uninstallSpec(obj)
	to := actionTimeout(obj, spec.Timeout)
	return &releaseAction{name: "uninstall", kind: kindRemediate, timeout: to, run: func(ctx context.Context) error {
		var observed []*observedRls
		logs := &logBuffer{}
		cfg, err := r.helmConfig(ctx, req, observeInto(&observed, ""), logs)
		if err != nil {
			return err
		}
		cur := latestSnapshot(obj)
		if cur == nil {
			return errors.New("no latest release: required to remediate")
		}
		before := cur.Digest
		un := action.NewUninstall(cfg)
		un.Timeout = to
		un.DisableHooks = spec.DisableHooks
		un.KeepHistory = spec.KeepHistory
		un.Wait = !spec.DisableWait
		un.DeletionPropagation = deletionPropagation(spec)
		_, err = un.Run(cur.Name)
		recordObserved(obj, observed, "", "")
		defer summarize(obj)
		cur = latestSnapshot(obj)
		if err != nil {
			msg := fmt.Sprintf(fmtUninstallRemediationFail, fullReleaseName(cur), versionedChartName(cur), strings.TrimSpace(req.secrets.Redact(err.Error())))
			obj.Status.Failures++
			reconcile.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionFalse, helmv2.UninstallFailedReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.UninstallFailedReason, req.secrets.Redact(logs.withLogs(msg)), r.snapshotMeta(cur))
			if cur == nil || cur.Digest == before {
				return errors.New(msg)
			}
			return nil
		}
		msg := fmt.Sprintf(fmtUninstallRemediationOK, fullReleaseName(cur), versionedChartName(cur))
		reconcile.SetCondition(obj, helmv2.RemediatedCondition, metav1.ConditionTrue, helmv2.UninstallSucceededReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.UninstallSucceededReason, msg, r.snapshotMeta(cur))
		return nil
	}}
}

// unlockAction marks a release left pending (a controller stopped during
// an action) failed, so the state machine can act on it. Flux compatible
// (internal/reconcile/unlock.go): Released=False PendingRelease.
func (r *HelmReleaseReconciler) unlockAction(req *releaseRequest) *releaseAction {
	obj := req.obj
	return &releaseAction{name: "unlock", kind: kindUnlock, timeout: timeout(obj), run: func(ctx context.Context) error {
		var observed []*observedRls
		cfg, err := r.helmConfig(ctx, req, observeInto(&observed, ""))
		if err != nil {
			return err
		}
		rls, err := lastRelease(cfg, shortenName(releaseName(obj)))
		if err != nil {
			return err
		}
		if rls.Info == nil || !rls.Info.Status.IsPending() {
			return nil
		}
		status := rls.Info.Status
		rls.SetStatus(release.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", status))
		err = cfg.Releases.Update(rls)
		recordObserved(obj, observed, "", "")
		defer summarize(obj)
		full := fmt.Sprintf("%s/%s.v%d", rls.Namespace, rls.Name, rls.Version)
		chartName := ""
		if rls.Chart != nil && rls.Chart.Metadata != nil {
			chartName = rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version
		}
		if err != nil {
			msg := fmt.Sprintf(fmtUnlockFailure, full, chartName, status, err)
			obj.Status.Failures++
			reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, helmv2.PendingReleaseReason, msg)
			r.Events.Event(obj, corev1.EventTypeWarning, helmv2.PendingReleaseReason, msg, nil)
			return errors.New(msg)
		}
		msg := fmt.Sprintf(fmtUnlockSuccess, full, chartName, status)
		reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionFalse, helmv2.PendingReleaseReason, msg)
		r.Events.Event(obj, corev1.EventTypeNormal, helmv2.PendingReleaseReason, msg, r.snapshotMeta(latestSnapshot(obj)))
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
	return &releaseAction{name: "correct cluster drift", kind: kindDriftCorrection, timeout: timeout(obj), run: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, timeout(obj))
		defer cancel()
		c, err := req.getter.client()
		if err != nil {
			return err
		}
		changes, err := drift.Correct(ctx, c, report)
		cur := latestSnapshot(obj)
		switch {
		case err != nil:
			var b strings.Builder
			b.WriteString("Failed to ")
			if changes != "" {
				b.WriteString("partially ")
			}
			b.WriteString("correct cluster state of release " + fullReleaseName(cur) + ":\n" + err.Error())
			if changes != "" {
				b.WriteString("\n\nSuccessful corrections:\n" + changes)
			}
			r.Events.Event(obj, corev1.EventTypeWarning, "DriftCorrectionFailed", req.secrets.Redact(b.String()), r.snapshotMeta(cur))
		case changes != "":
			r.Events.Event(obj, corev1.EventTypeNormal, "DriftCorrected",
				req.secrets.Redact(fmt.Sprintf("Cluster state of release %s has been corrected:\n%s", fullReleaseName(cur), changes)), r.snapshotMeta(cur))
		}
		return nil
	}}
}
