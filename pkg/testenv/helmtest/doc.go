// Package helmtest holds test fixtures shared by the Helm tests of source-controller and
// helm-controller: packaged charts, an HTTP chart repository, an in-process OCI registry and a
// reader of the Helm releases stored in a cluster.
package helmtest

import (
	// The fixtures are built on these; imported here until they land (issue #12).
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "helm.sh/helm/v3/pkg/action"
	_ "helm.sh/helm/v3/pkg/chart/loader"
	_ "helm.sh/helm/v3/pkg/chartutil"
	_ "helm.sh/helm/v3/pkg/registry"
	_ "helm.sh/helm/v3/pkg/repo"
	_ "helm.sh/helm/v3/pkg/storage/driver"
)
