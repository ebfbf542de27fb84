module github.com/eddyops/eddy/cli

go 1.26.0

require (
	github.com/eddyops/eddy/api v0.0.0-00010101000000-000000000000
	github.com/eddyops/eddy/pkg v0.0.0-00010101000000-000000000000
	github.com/fluxcd/pkg/apis/meta v1.33.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/term v0.45.0
	k8s.io/api v0.37.2
	k8s.io/apiextensions-apiserver v0.37.2
	k8s.io/apimachinery v0.37.2
	k8s.io/client-go v0.37.2
	sigs.k8s.io/cli-utils v0.37.2
	sigs.k8s.io/controller-runtime v0.25.2
	sigs.k8s.io/yaml v1.6.0
)
