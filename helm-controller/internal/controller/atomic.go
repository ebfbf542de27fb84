package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/drift"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/pkg/reconcile"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// releaseState is the state of a release against its HelmRelease (Flux's
// internal/reconcile/state.go).
type releaseState string

const (
	stateAbsent    releaseState = "Absent"
	stateLocked    releaseState = "Locked"
	stateUnmanaged releaseState = "Unmanaged"
	stateOutOfSync releaseState = "OutOfSync"
	stateUntested  releaseState = "Untested"
	stateFailed    releaseState = "Failed"
	stateDrifted   releaseState = "Drifted"
	stateInSync    releaseState = "InSync"
)

// actionKind groups the actions as Flux's reconciler types do: one of each
// kind per reconcile, and a reconcile stops after a remediation.
type actionKind int

const (
	kindRelease actionKind = iota
	kindTest
	kindRemediate
	kindUnlock
	kindDriftCorrection
)

// releaseAction is one Helm action of the state machine.
type releaseAction struct {
	name    string // as in "Running '<name>' action"
	kind    actionKind
	timeout time.Duration
	run     func(ctx context.Context) error
}

// determineState reads the last release in storage and compares it with
// status.history and the desired chart and values. Flux compatible order of
// checks (2.10 §2.1 fact 4). A Drifted state leaves its report in req.drift.
func (r *HelmReleaseReconciler) determineState(ctx context.Context, req *releaseRequest, cfg *action.Configuration) (releaseState, string, error) {
	obj := req.obj
	rls, err := lastRelease(cfg, shortenName(releaseName(obj)))
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return stateAbsent, "no release in storage for object", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("failed to retrieve last release from storage: %w", err)
	}
	if rls.Info != nil && rls.Info.Status.IsPending() {
		return stateLocked, fmt.Sprintf("release with status '%s'", rls.Info.Status), nil
	}
	cur := latestSnapshot(obj)
	if cur == nil {
		if rls.Info != nil && rls.Info.Status == release.StatusUninstalled {
			return stateAbsent, "found uninstalled release in storage", nil
		}
		return stateUnmanaged, "found existing release in storage", nil
	}
	if cur.Name != rls.Name || cur.Namespace != rls.Namespace || cur.Version != rls.Version {
		return stateUnmanaged, "release not observed to be made for object", nil
	}
	if releaseDigest(rls, cur.OCIDigest) != cur.Digest {
		return stateUnmanaged, "release digest verification error", nil
	}
	switch rls.Info.Status {
	case release.StatusFailed:
		return stateFailed, "", nil
	case release.StatusUninstalled:
		return stateAbsent, "found uninstalled release in storage", nil
	case release.StatusDeployed:
		if rls.Chart == nil || rls.Chart.Metadata == nil || rls.Chart.Metadata.Name != req.chart.Metadata.Name ||
			rls.Chart.Metadata.Version != req.chart.Metadata.Version {
			return stateOutOfSync, "release chart has changed", nil
		}
		if cur.ConfigDigest != req.configDigest {
			return stateOutOfSync, "release config values changed", nil
		}
		if obj.Status.ObservedGeneration != obj.Generation {
			if d := postrender.PostRenderersDigest(obj); d != obj.Status.ObservedPostRenderersDigest {
				return stateOutOfSync, "postrenderers digest has changed", nil
			}
			if d := postrender.CommonMetadataDigest(obj); d != obj.Status.ObservedCommonMetadataDigest {
				return stateOutOfSync, "common metadata digest has changed", nil
			}
		}
		if ts := testSpec(obj); ts.Enable {
			if !hasBeenTested(cur) {
				return stateUntested, "", nil
			}
			if m := activeRemediation(obj); m != nil && !m.mustIgnoreTestFailures(ts.IgnoreFailures) &&
				hasTestInPhase(cur, release.HookPhaseFailed.String()) {
				return stateFailed, "release has test in failed phase", nil
			}
		}
		if mode := driftMode(obj); mode == helmv2.DriftDetectionEnabled || mode == helmv2.DriftDetectionWarn {
			c, err := req.getter.client()
			if err != nil {
				return "", "", err
			}
			report, err := drift.Detect(ctx, c, rls.Manifest, rls.Name, rls.Namespace, *obj.Spec.DriftDetection)
			if err != nil {
				if report == nil || !report.Drifted() {
					return "", "", fmt.Errorf("unable to determine cluster state: %w", err)
				}
				ctrl.LoggerFrom(ctx).Error(err, "diff of release against cluster state completed with error")
			}
			if report.Drifted() {
				req.drift = report
				return stateDrifted, "", nil
			}
		}
		return stateInSync, "", nil
	}
	return "", "", fmt.Errorf("unable to determine state for release with status '%s'", rls.Info.Status)
}

// atomicRelease runs the state machine until the release is in sync, an
// action failed, or a remediation ran: determine the state, pick the next
// action, run it, again. Each action kind runs at most once per reconcile.
// Flux compatible (internal/reconcile/atomic_release.go).
func (r *HelmReleaseReconciler) atomicRelease(ctx context.Context, req *releaseRequest, p *reconcile.StatusPatcher) error {
	log := ctrl.LoggerFrom(ctx)
	obj := req.obj
	ran := map[actionKind]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("atomic release canceled: %w", err)
		}
		cfg, err := r.helmConfig(ctx, req, nil)
		if err != nil {
			reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.FactoryErrorReason, err.Error())
			return err
		}
		state, why, err := r.determineState(ctx, req, cfg)
		if err != nil {
			reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.StateErrorReason, "Could not determine release state: "+err.Error())
			return err
		}
		log.V(1).Info("release state", "state", string(state), "reason", why)
		next, err := r.actionFor(ctx, req, state)
		if err != nil {
			switch {
			case errors.Is(err, errExceededMaxRetries):
				r.stall(obj, helmv2.RetriesExceededReason, fmt.Sprintf("Failed to %s after %d attempt(s)",
					obj.Status.LastAttemptedReleaseAction, failureCount(obj)))
			case errors.Is(err, errMissingRollback):
				r.stall(obj, helmv2.MissingRollbackTargetReason, "Failed to perform remediation: "+err.Error())
			}
			return err
		}
		if next == nil {
			reconcile.RemoveConditions(obj, meta.ReconcilingCondition)
			summarize(obj)
			return nil
		}
		if ran[next.kind] {
			if d, ok := activeRetry(obj); ok {
				reconcile.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
				return errRetryAfterInterval
			}
			if m := activeRemediation(obj); m == nil || !m.retriesExhausted() {
				r.retrying(obj)
				return errMustRequeue
			}
			reconcile.RemoveConditions(obj, meta.ReconcilingCondition)
			return nil
		}
		msg := fmt.Sprintf("Running '%s' action with timeout of %s", next.name, next.timeout)
		reconcile.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, msg)
		// Ready=True goes with no Reconciling (kstatus): any action
		// after a success reads as in progress.
		if next.kind == kindRelease || apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
			reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, msg)
		}
		if err := p.Patch(ctx); err != nil {
			return err
		}
		log.Info(strings.ToLower(msg[:1]) + msg[1:])
		if err := next.run(ctx); err != nil {
			if d, ok := activeRetry(obj); ok {
				log.Error(err, fmt.Sprintf("failed to run '%s' action", next.name))
				reconcile.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
				return errRetryAfterInterval
			}
			if apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
				reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.ReconcileErrorReason, err.Error())
			}
			r.retrying(obj)
			return err
		}
		if next.kind == kindRemediate {
			if d, ok := activeRetry(obj); ok {
				reconcile.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
				return errRetryAfterInterval
			}
			m := activeRemediation(obj)
			if m == nil || !m.retriesExhausted() || m.strategy == helmv2.RemediationStrategyUninstall && m.action == helmv2.ReleaseActionUpgrade {
				r.retrying(obj)
				return errMustRequeue
			}
			r.stall(obj, helmv2.RetriesExceededReason, fmt.Sprintf("Failed to %s after %d attempt(s)",
				obj.Status.LastAttemptedReleaseAction, failureCount(obj)))
			return errExceededMaxRetries
		}
		ran[next.kind] = true
		if apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
			reconcile.RemoveConditions(obj, meta.ReconcilingCondition)
		}
		if err := p.Patch(ctx); err != nil {
			return err
		}
	}
}

// retrying marks Reconciling=True ProgressingWithRetry with Ready's message.
func (r *HelmReleaseReconciler) retrying(obj *helmv2.HelmRelease) {
	msg := ""
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition); c != nil {
		msg = c.Message
	}
	reconcile.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
}

// stall marks Stalled=True (and Ready=False when it is not) and removes
// Reconciling. No event: Flux emits none for these.
func (r *HelmReleaseReconciler) stall(obj *helmv2.HelmRelease, reason, msg string) {
	reconcile.RemoveConditions(obj, meta.ReconcilingCondition)
	reconcile.SetCondition(obj, meta.StalledCondition, metav1.ConditionTrue, reason, msg)
	if !apimeta.IsStatusConditionFalse(obj.Status.Conditions, meta.ReadyCondition) {
		reconcile.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	}
}

func failureCount(obj *helmv2.HelmRelease) int64 {
	if m := activeRemediation(obj); m != nil {
		return m.failureCount()
	}
	return 0
}

// actionFor picks the action for state. Flux compatible
// (AtomicRelease.actionForState).
func (r *HelmReleaseReconciler) actionFor(ctx context.Context, req *releaseRequest, state releaseState) (*releaseAction, error) {
	log := ctrl.LoggerFrom(ctx)
	obj := req.obj
	force := false
	if v, ok := handledRequest(obj, helmv2.ForceRequestAnnotation, obj.Status.LastHandledForceAt); ok {
		force = true
		obj.Status.LastHandledForceAt = v
	}
	ts := testSpec(obj)
	switch state {
	case stateInSync:
		if _, ok := activeRetry(obj); ok {
			if len(obj.Status.History) > defaultMaxHistory {
				obj.Status.History = obj.Status.History[:defaultMaxHistory]
			}
		} else {
			ignore := ts.IgnoreFailures
			if m := activeRemediation(obj); m != nil {
				ignore = m.mustIgnoreTestFailures(ts.IgnoreFailures)
			}
			truncateHistory(obj, ignore)
		}
		if force {
			log.Info("forcing upgrade for in-sync release: force requested through annotation")
			return r.upgradeAction(req), nil
		}
		cur := latestSnapshot(obj)
		if apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.RemediatedCondition) {
			replaceCondition(obj, helmv2.RemediatedCondition, helmv2.ReleasedCondition, helmv2.UpgradeSucceededReason,
				fmt.Sprintf(fmtUpgradeSuccess, fullReleaseName(cur), versionedChartName(cur)))
		}
		if !apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) ||
			!apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.ReleasedCondition) {
			if c := apimeta.FindStatusCondition(obj.Status.Conditions, helmv2.ReleasedCondition); c != nil {
				switch c.Reason {
				case helmv2.InstallFailedReason:
					reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, helmv2.InstallSucceededReason,
						fmt.Sprintf(fmtInstallSuccess, fullReleaseName(cur), versionedChartName(cur)))
				case helmv2.UpgradeFailedReason:
					reconcile.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, helmv2.UpgradeSucceededReason,
						fmt.Sprintf(fmtUpgradeSuccess, fullReleaseName(cur), versionedChartName(cur)))
				}
			}
		}
		if mode := driftMode(obj); mode == helmv2.DriftDetectionEnabled || mode == helmv2.DriftDetectionWarn {
			reconcile.SetCondition(obj, helmv2.DriftedCondition, metav1.ConditionFalse, helmv2.NoDriftDetectedReason,
				"No drift detected against the cluster state")
		} else {
			reconcile.RemoveConditions(obj, helmv2.DriftedCondition)
		}
		return nil, nil
	case stateDrifted:
		cur := latestSnapshot(obj)
		msg := req.secrets.Redact(ssa.ReleaseDriftMessage(fullReleaseName(cur), req.drift.Drifts()))
		r.Events.Event(obj, corev1.EventTypeWarning, helmv2.DriftDetectedReason, msg, r.snapshotMeta(cur))
		reconcile.SetCondition(obj, helmv2.DriftedCondition, metav1.ConditionTrue, helmv2.DriftDetectedReason, msg)
		if driftMode(obj) == helmv2.DriftDetectionEnabled {
			return r.correctDriftAction(req, req.drift), nil
		}
		return nil, nil
	case stateLocked:
		return r.unlockAction(req), nil
	case stateAbsent:
		if installRemediation(obj).retriesExhausted() && !force {
			return nil, fmt.Errorf("%w: cannot install release", errExceededMaxRetries)
		}
		return r.installAction(req), nil
	case stateUnmanaged:
		obj.Status.History = nil
		return r.upgradeAction(req), nil
	case stateOutOfSync:
		if upgradeRemediation(obj).retriesExhausted() && !force {
			return nil, fmt.Errorf("%w: cannot upgrade release", errExceededMaxRetries)
		}
		return r.upgradeAction(req), nil
	case stateUntested:
		if apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.RemediatedCondition) {
			cur := latestSnapshot(obj)
			replaceCondition(obj, helmv2.RemediatedCondition, helmv2.ReleasedCondition, helmv2.UpgradeSucceededReason,
				fmt.Sprintf(fmtUpgradeSuccess, fullReleaseName(cur), versionedChartName(cur)))
		}
		return r.testAction(req), nil
	case stateFailed:
		if _, ok := activeRetry(obj); ok {
			if len(obj.Status.History) > defaultMaxHistory {
				obj.Status.History = obj.Status.History[:defaultMaxHistory]
			}
			return r.upgradeAction(req), nil
		}
		m := activeRemediation(obj)
		if m == nil || m.failureCount() <= 0 || force {
			return r.upgradeAction(req), nil
		}
		if m.retriesExhausted() && !m.remediateLast {
			return nil, fmt.Errorf("%w: cannot remediate failed release", errExceededMaxRetries)
		}
		ignore := m.mustIgnoreTestFailures(ts.IgnoreFailures)
		truncateHistory(obj, ignore)
		if m.strategy == helmv2.RemediationStrategyUninstall {
			return r.uninstallRemediationAction(req), nil
		}
		prev := previousSnapshot(obj, ignore)
		if prev == nil {
			return nil, fmt.Errorf("%w: cannot remediate failed release", errMissingRollback)
		}
		cfg, err := r.helmConfig(ctx, req, nil)
		if err != nil {
			return nil, err
		}
		if _, err := cfg.Releases.Get(prev.Name, prev.Version); err != nil {
			if errors.Is(err, driver.ErrReleaseNotFound) {
				return nil, fmt.Errorf("%w: cannot remediate failed release", errMissingRollback)
			}
			return nil, fmt.Errorf("cannot verify previous release to roll back to: %w", err)
		}
		return r.rollbackAction(req, *prev), nil
	}
	return nil, fmt.Errorf("unknown release state: %s", state)
}

// replaceCondition turns condition target into replacement with the given
// reason and message (status True). Flux compatible.
func replaceCondition(obj *helmv2.HelmRelease, target, replacement, reason, msg string) {
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, target); c != nil {
		reconcile.RemoveConditions(obj, target, replacement)
		reconcile.SetCondition(obj, replacement, metav1.ConditionTrue, reason, msg)
	}
}

// Messages of the release actions. Flux compatible (internal/reconcile/*.go).
const (
	fmtInstallFailure           = "Helm install failed for release %s/%s with chart %s@%s: %s"
	fmtInstallSuccess           = "Helm install succeeded for release %s with chart %s"
	fmtUpgradeFailure           = "Helm upgrade failed for release %s/%s with chart %s@%s: %s"
	fmtUpgradeSuccess           = "Helm upgrade succeeded for release %s with chart %s"
	fmtTestPending              = "Helm release %s with chart %s is awaiting tests"
	fmtTestFailure              = "Helm test failed for release %s with chart %s: %s"
	fmtTestSuccess              = "Helm test succeeded for release %s with chart %s: %s"
	fmtRollbackFailure          = "Helm rollback to previous release %s with chart %s failed: %s"
	fmtRollbackSuccess          = "Helm rollback to previous release %s with chart %s succeeded"
	fmtUninstallRemediationFail = "Helm uninstall remediation for release %s with chart %s failed: %s"
	fmtUninstallRemediationOK   = "Helm uninstall remediation for release %s with chart %s succeeded"
	fmtUnlockFailure            = "Unlock of Helm release %s with chart %s in %s state failed: %s"
	fmtUnlockSuccess            = "Unlocked Helm release %s with chart %s in %s state"
)

// logBuffer keeps the last lines Helm logged during an action, for the
// failure event ("Last Helm logs").
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) log(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, fmt.Sprintf(format, args...))
	if len(b.lines) > 10 {
		b.lines = b.lines[len(b.lines)-10:]
	}
}

func (b *logBuffer) withLogs(msg string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) == 0 {
		return msg
	}
	return msg + "\n\nLast Helm logs:\n\n" + strings.Join(b.lines, "\n")
}

// helmConfig is the Helm configuration of req's release; observe (nil for
// none) is told of each release written. Helm's log lines go to logs (nil
// for the reconcile's debug log).
func (r *HelmReleaseReconciler) helmConfig(ctx context.Context, req *releaseRequest, observe func(*release.Release), logs ...*logBuffer) (*action.Configuration, error) {
	debug := helmLog(ctx)
	logf := debug
	if len(logs) > 0 {
		b := logs[0]
		logf = func(format string, args ...any) {
			debug(format, args...)
			b.log(format, args...)
		}
	}
	poll := r.HealthPoll
	if ws := req.obj.Spec.WaitStrategy; ws != nil && ws.Name == "legacy" {
		poll = -1
	}
	waitCtx := req.waitCtx
	if waitCtx == nil {
		waitCtx = ctx
	}
	return newHelmConfig(waitCtx, req.getter, storageNamespace(req.obj), maxHistory(req.obj), poll, logf, observe)
}

// recordInventory sets status.inventory from the newest observed release.
func (r *HelmReleaseReconciler) recordInventory(req *releaseRequest, observed []*observedRls) {
	if len(observed) == 0 {
		return
	}
	newest := observed[0]
	for _, o := range observed {
		if o.snap.Version > newest.snap.Version {
			newest = o
		}
	}
	mapper, _ := req.getter.ToRESTMapper()
	req.obj.Status.Inventory = inventoryOf(newest.manifest, newest.snap.Namespace, req.chart, mapper)
}
