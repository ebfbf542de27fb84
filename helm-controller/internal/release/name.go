// Package release is helm-controller's model of a Helm release as a
// HelmRelease records it: the release's name and namespaces read from the
// spec, the snapshots of status.history taken from the releases written to
// Helm's storage, their digests, and the inventory of a release's objects.
// It runs no Helm action (internal/action does) and writes no status
// itself: its functions return what the caller stores.
//
// Helm's own release package is imported as helmrelease throughout
// helm-controller.
package release

import (
	"crypto/sha256"
	"fmt"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
)

// ShortenName returns name unchanged up to 53 characters (Helm's limit on
// release names), else its first 40 characters, "-" and the first 12 hex
// digits of its sha256. Flux compatible (internal/release/name.go).
func ShortenName(name string) string {
	if len(name) <= 53 {
		return name
	}
	return name[:40] + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(name)))[:12]
}

// Name is spec.releaseName, else `[targetNamespace-]name` (before
// shortening). Flux compatible.
func Name(obj *helmv2.HelmRelease) string {
	if obj.Spec.ReleaseName != "" {
		return obj.Spec.ReleaseName
	}
	if obj.Spec.TargetNamespace != "" {
		return obj.Spec.TargetNamespace + "-" + obj.Name
	}
	return obj.Name
}

// ShortName is the name the release has in Helm's storage: Name shortened
// by ShortenName.
func ShortName(obj *helmv2.HelmRelease) string { return ShortenName(Name(obj)) }

// Namespace is spec.targetNamespace, else the HelmRelease's.
func Namespace(obj *helmv2.HelmRelease) string {
	if obj.Spec.TargetNamespace != "" {
		return obj.Spec.TargetNamespace
	}
	return obj.Namespace
}

// StorageNamespace is spec.storageNamespace, else the HelmRelease's.
func StorageNamespace(obj *helmv2.HelmRelease) string {
	if obj.Spec.StorageNamespace != "" {
		return obj.Spec.StorageNamespace
	}
	return obj.Namespace
}
