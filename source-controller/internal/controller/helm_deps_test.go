package controller

// Keeps the Helm SDK required by this module until the HelmRepository and HelmChart reconcilers
// import it (issue #12); delete this file then.
import (
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/registry"
	_ "helm.sh/helm/v3/pkg/repo"
)
