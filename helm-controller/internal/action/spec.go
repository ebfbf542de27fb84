// Package action runs helm-controller's Helm actions (install, upgrade,
// test, rollback, uninstall, unlock) with the Helm v3 SDK, each configured
// from a HelmRelease's spec with Flux's defaults, against the storage and
// Kubernetes client of the Helm configuration it is given. It records
// nothing on the HelmRelease: the reconciler observes the releases written
// (release.Observer) and sets status and events.
//
// Helm's own action package is imported as helmaction throughout
// helm-controller.
package action

import (
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstallSpec is spec.install, zero when unset.
func InstallSpec(obj *helmv2.HelmRelease) helmv2.Install {
	if obj.Spec.Install == nil {
		return helmv2.Install{}
	}
	return *obj.Spec.Install
}

// UpgradeSpec is spec.upgrade, zero when unset.
func UpgradeSpec(obj *helmv2.HelmRelease) helmv2.Upgrade {
	if obj.Spec.Upgrade == nil {
		return helmv2.Upgrade{}
	}
	return *obj.Spec.Upgrade
}

// TestSpec is spec.test, zero when unset.
func TestSpec(obj *helmv2.HelmRelease) helmv2.Test {
	if obj.Spec.Test == nil {
		return helmv2.Test{}
	}
	return *obj.Spec.Test
}

// TestFilters is spec.test.filters, nil when unset.
func TestFilters(obj *helmv2.HelmRelease) []helmv2.Filter {
	if f := TestSpec(obj).Filters; f != nil {
		return *f
	}
	return nil
}

// RollbackSpec is spec.rollback, zero when unset.
func RollbackSpec(obj *helmv2.HelmRelease) helmv2.Rollback {
	if obj.Spec.Rollback == nil {
		return helmv2.Rollback{}
	}
	return *obj.Spec.Rollback
}

// UninstallSpec is spec.uninstall, zero when unset.
func UninstallSpec(obj *helmv2.HelmRelease) helmv2.Uninstall {
	if obj.Spec.Uninstall == nil {
		return helmv2.Uninstall{}
	}
	return *obj.Spec.Uninstall
}

// Timeout is spec.timeout, default 5m0s.
func Timeout(obj *helmv2.HelmRelease) time.Duration {
	if obj.Spec.Timeout == nil {
		return 5 * time.Minute
	}
	return obj.Spec.Timeout.Duration
}

// TimeoutOf is an action's own timeout own, else spec.timeout (Timeout).
func TimeoutOf(obj *helmv2.HelmRelease, own *metav1.Duration) time.Duration {
	if own != nil {
		return own.Duration
	}
	return Timeout(obj)
}

// MaxHistory is spec.maxHistory, default release.DefaultMaxHistory; 0
// keeps every release version in storage.
func MaxHistory(obj *helmv2.HelmRelease) int {
	if obj.Spec.MaxHistory == nil {
		return release.DefaultMaxHistory
	}
	return *obj.Spec.MaxHistory
}

// deletionPropagation is uninstall.deletionPropagation, default background.
func deletionPropagation(u helmv2.Uninstall) string {
	if u.DeletionPropagation != nil {
		return *u.DeletionPropagation
	}
	return "background"
}
