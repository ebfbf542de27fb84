package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/ssa"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
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

// atomicRelease runs the state machine until the release is in sync, an
// action failed, or a remediation ran: determine the state, pick the next
// action, run it, again. Each action kind runs at most once per reconcile.
// Flux compatible (internal/reconcile/atomic_release.go).
func (r *HelmReleaseReconciler) atomicRelease(ctx context.Context, req *releaseRequest, p *reconciler.StatusPatcher) error {
	log := ctrl.LoggerFrom(ctx)
	obj := req.obj
	ran := map[actionKind]bool{}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("atomic release canceled: %w", err)
		}
		cfg, err := r.helmConfig(ctx, req, nil)
		if err != nil {
			reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.FactoryErrorReason, err.Error())
			return err
		}
		state, why, err := r.determineState(ctx, req, cfg)
		if err != nil {
			reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.StateErrorReason, "Could not determine release state: "+err.Error())
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
			reconciler.RemoveConditions(obj, meta.ReconcilingCondition)
			summarize(obj)
			return nil
		}
		if ran[next.kind] {
			if d, ok := activeRetry(obj); ok {
				reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
				return errRetryAfterInterval
			}
			if m := activeRemediation(obj); m == nil || !m.retriesExhausted() {
				r.retrying(obj)
				return errMustRequeue
			}
			reconciler.RemoveConditions(obj, meta.ReconcilingCondition)
			return nil
		}
		msg := fmt.Sprintf("Running '%s' action with timeout of %s", next.name, next.timeout)
		reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, msg)
		// Ready=True goes with no Reconciling (kstatus): any action
		// after a success reads as in progress.
		if next.kind == kindRelease || apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
			reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, msg)
		}
		if err := p.Patch(ctx); err != nil {
			return err
		}
		log.Info(strings.ToLower(msg[:1]) + msg[1:])
		if err := next.run(ctx); err != nil {
			if d, ok := activeRetry(obj); ok {
				log.Error(err, fmt.Sprintf("failed to run '%s' action", next.name))
				reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
				return errRetryAfterInterval
			}
			if apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
				reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, helmv2.ReconcileErrorReason, err.Error())
			}
			r.retrying(obj)
			return err
		}
		if next.kind == kindRemediate {
			if d, ok := activeRetry(obj); ok {
				reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, "retrying after "+d.String())
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
			reconciler.RemoveConditions(obj, meta.ReconcilingCondition)
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
	reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
}

// stall marks Stalled=True (and Ready=False when it is not) and removes
// Reconciling. No event: Flux emits none for these.
func (r *HelmReleaseReconciler) stall(obj *helmv2.HelmRelease, reason, msg string) {
	reconciler.RemoveConditions(obj, meta.ReconcilingCondition)
	reconciler.SetCondition(obj, meta.StalledCondition, metav1.ConditionTrue, reason, msg)
	if !apimeta.IsStatusConditionFalse(obj.Status.Conditions, meta.ReadyCondition) {
		reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	}
}

// actionFor picks the action for state; nil when there is none to run.
// Flux compatible (AtomicRelease.actionForState).
func (r *HelmReleaseReconciler) actionFor(ctx context.Context, req *releaseRequest, state releaseState) (*releaseAction, error) {
	obj := req.obj
	force := false
	if v, ok := handledRequest(obj, helmv2.ForceRequestAnnotation, obj.Status.LastHandledForceAt); ok {
		force = true
		obj.Status.LastHandledForceAt = v
	}
	upgrade := r.releaseStep(req, helmv2.ReleaseActionUpgrade)
	switch state {
	case stateInSync:
		return r.inSync(ctx, req, force), nil
	case stateDrifted:
		return r.drifted(req), nil
	case stateLocked:
		return r.unlockAction(req), nil
	case stateAbsent:
		if installRemediation(obj).retriesExhausted() && !force {
			return nil, fmt.Errorf("%w: cannot install release", errExceededMaxRetries)
		}
		return r.releaseStep(req, helmv2.ReleaseActionInstall), nil
	case stateUnmanaged:
		obj.Status.History = nil
		return upgrade, nil
	case stateOutOfSync:
		if upgradeRemediation(obj).retriesExhausted() && !force {
			return nil, fmt.Errorf("%w: cannot upgrade release", errExceededMaxRetries)
		}
		return upgrade, nil
	case stateUntested:
		if apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.RemediatedCondition) {
			cur := release.Latest(obj.Status.History)
			replaceCondition(obj, helmv2.RemediatedCondition, helmv2.ReleasedCondition, helmv2.UpgradeSucceededReason,
				fmt.Sprintf(fmtUpgradeSuccess, release.FullName(cur), release.VersionedChartName(cur)))
		}
		return r.testAction(req), nil
	case stateFailed:
		if _, ok := activeRetry(obj); ok {
			obj.Status.History = release.Limit(obj.Status.History)
			return upgrade, nil
		}
		m := activeRemediation(obj)
		if m == nil || m.failureCount() <= 0 || force {
			return upgrade, nil
		}
		return r.remediation(ctx, req, m)
	}
	return nil, fmt.Errorf("unknown release state: %s", state)
}

// inSync truncates the history of a release in sync, turns a remediated
// or failed Released into its success and records drift detection; it
// returns an upgrade when one is forced, else nil.
func (r *HelmReleaseReconciler) inSync(ctx context.Context, req *releaseRequest, force bool) *releaseAction {
	obj := req.obj
	if _, ok := activeRetry(obj); ok {
		obj.Status.History = release.Limit(obj.Status.History)
	} else {
		ts := action.TestSpec(obj)
		ignore := ts.IgnoreFailures
		if m := activeRemediation(obj); m != nil {
			ignore = m.mustIgnoreTestFailures(ts.IgnoreFailures)
		}
		obj.Status.History = release.Truncate(obj.Status.History, ignore)
	}
	if force {
		ctrl.LoggerFrom(ctx).Info("forcing upgrade for in-sync release: force requested through annotation")
		return r.releaseStep(req, helmv2.ReleaseActionUpgrade)
	}
	cur := release.Latest(obj.Status.History)
	if apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.RemediatedCondition) {
		replaceCondition(obj, helmv2.RemediatedCondition, helmv2.ReleasedCondition, helmv2.UpgradeSucceededReason,
			fmt.Sprintf(fmtUpgradeSuccess, release.FullName(cur), release.VersionedChartName(cur)))
	}
	if !apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) ||
		!apimeta.IsStatusConditionTrue(obj.Status.Conditions, helmv2.ReleasedCondition) {
		if c := apimeta.FindStatusCondition(obj.Status.Conditions, helmv2.ReleasedCondition); c != nil {
			switch c.Reason {
			case helmv2.InstallFailedReason:
				reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, helmv2.InstallSucceededReason,
					fmt.Sprintf(fmtInstallSuccess, release.FullName(cur), release.VersionedChartName(cur)))
			case helmv2.UpgradeFailedReason:
				reconciler.SetCondition(obj, helmv2.ReleasedCondition, metav1.ConditionTrue, helmv2.UpgradeSucceededReason,
					fmt.Sprintf(fmtUpgradeSuccess, release.FullName(cur), release.VersionedChartName(cur)))
			}
		}
	}
	if mode := driftMode(obj); mode == helmv2.DriftDetectionEnabled || mode == helmv2.DriftDetectionWarn {
		reconciler.SetCondition(obj, helmv2.DriftedCondition, metav1.ConditionFalse, helmv2.NoDriftDetectedReason,
			"No drift detected against the cluster state")
	} else {
		reconciler.RemoveConditions(obj, helmv2.DriftedCondition)
	}
	return nil
}

// drifted reports the drift found (event and Drifted=True) and returns
// its correction when drift detection is enabled, else nil.
func (r *HelmReleaseReconciler) drifted(req *releaseRequest) *releaseAction {
	obj := req.obj
	cur := release.Latest(obj.Status.History)
	drifts := req.drift.Drifts()
	msg := req.secrets.Redact(ssa.ReleaseDriftMessage(release.FullName(cur), drifts))
	r.Events.WithAnnotations(ssa.DriftAnnotations(drifts, req.secrets.Redact)).Event(obj, corev1.EventTypeWarning, helmv2.DriftDetectedReason, msg, r.snapshotMeta(cur))
	reconciler.SetCondition(obj, helmv2.DriftedCondition, metav1.ConditionTrue, helmv2.DriftDetectedReason, msg)
	if driftMode(obj) == helmv2.DriftDetectionEnabled {
		return r.correctDriftAction(req, req.drift)
	}
	return nil
}

// remediation is the remediation m of a failed release with failures:
// uninstall, or rollback to the previous deployed snapshot, which must be
// in storage. Retries exhausted without remediateLastFailure stall.
func (r *HelmReleaseReconciler) remediation(ctx context.Context, req *releaseRequest, m *remediation) (*releaseAction, error) {
	obj := req.obj
	if m.retriesExhausted() && !m.remediateLast {
		return nil, fmt.Errorf("%w: cannot remediate failed release", errExceededMaxRetries)
	}
	ignore := m.mustIgnoreTestFailures(action.TestSpec(obj).IgnoreFailures)
	obj.Status.History = release.Truncate(obj.Status.History, ignore)
	if m.strategy == helmv2.RemediationStrategyUninstall {
		return r.uninstallRemediationAction(req), nil
	}
	prev := release.Previous(obj.Status.History, ignore)
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
