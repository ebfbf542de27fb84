package action

import (
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	helmaction "helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
)

// Test runs the test hooks of release name that spec.test.filters select,
// within spec.test's timeout, and returns the release tested. Flux
// compatible (internal/action/test.go).
func Test(cfg *helmaction.Configuration, obj *helmv2.HelmRelease, name string) (*helmrelease.Release, error) {
	t := helmaction.NewReleaseTesting(cfg)
	t.Namespace = release.Namespace(obj)
	t.Timeout = TimeoutOf(obj, TestSpec(obj).Timeout)
	t.Filters = map[string][]string{}
	for _, f := range TestFilters(obj) {
		if f.Exclude {
			t.Filters["!name"] = append(t.Filters["!name"], f.Name)
		} else {
			t.Filters["name"] = append(t.Filters["name"], f.Name)
		}
	}
	return t.Run(name)
}
