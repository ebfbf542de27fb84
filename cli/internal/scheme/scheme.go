// Package scheme is the scheme of the eddy command's typed clients: the
// Kubernetes built-in kinds, CRDs and Eddy's API groups.
package scheme

import (
	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// New returns a new scheme with the built-in kinds, apiextensions/v1 and
// Eddy's API groups (notification v1 and v1beta3, image.toolkit.fluxcd.io,
// and Argo CD's argoproj.io/v1alpha1).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		sourcev1.AddToScheme, kustomizev1.AddToScheme, helmv2.AddToScheme, notificationv1.AddToScheme, notificationv1beta3.AddToScheme, argov1.AddToScheme,
		imagev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the groups' registrations do not fail
		}
	}
	return s
}
