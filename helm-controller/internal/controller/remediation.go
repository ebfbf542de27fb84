package controller

import (
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	if r := action.InstallSpec(obj).Remediation; r != nil {
		m.retries, m.ignoreTests = r.Retries, r.IgnoreTestFailures
		m.remediateLast = r.RemediateLastFailure != nil && *r.RemediateLastFailure
	}
	return m
}

func upgradeRemediation(obj *helmv2.HelmRelease) *remediation {
	m := &remediation{action: helmv2.ReleaseActionUpgrade, strategy: helmv2.RemediationStrategyRollback,
		failureCount: func() int64 { return obj.Status.UpgradeFailures }, incrementFailure: func() { obj.Status.UpgradeFailures++ }}
	if r := action.UpgradeSpec(obj).Remediation; r != nil {
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
		if s := action.InstallSpec(obj).Strategy; s != nil {
			name, interval = s.Name, s.RetryInterval
		}
	case helmv2.ReleaseActionUpgrade:
		if s := action.UpgradeSpec(obj).Strategy; s != nil {
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

// failureCount is the failure count of the active remediation, 0 when none.
func failureCount(obj *helmv2.HelmRelease) int64 {
	if m := activeRemediation(obj); m != nil {
		return m.failureCount()
	}
	return 0
}
