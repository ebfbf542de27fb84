// Package bench measures helm-controller as users run it: the built
// source-controller and helm-controller binaries, as processes, against the
// local cluster's full profile (kube-controller-manager, kube-scheduler and
// kwok fake nodes, so the charts' Deployments become Available), installing
// podinfo's chart from a HelmRepository served over HTTP. The baseline is a
// plain loop of Helm SDK installs of the same chart in the same run.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./helm-controller/internal/bench/
//
// It is a benchmark, not a test: nothing here asserts a duration. It has its
// own cluster (TestMain) so that it does not share one with the controller
// package's tests.
package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
)

var env *testenv.Environment

// TestMain starts the cluster only when a benchmark is asked for: the
// package has no tests, so `make test` costs it nothing.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}})
}
