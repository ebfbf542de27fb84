package controller

// Keeps the Helm SDK required by this module until the HelmRelease reconciler imports it
// (issue #12); delete this file then.
import (
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/storage/driver"
)
