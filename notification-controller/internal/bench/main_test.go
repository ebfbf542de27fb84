// Package bench measures the webhook path as users run it: a signed GitHub
// push webhook to a Receiver, the GitRepository fetch, the artifact, the
// Kustomization's apply, with Eddy's three built controllers (source-,
// kustomize- and notification-controller) beside Flux's own three on the
// same API server, each stack on its own shard (--watch-label-selector) and
// namespace, pushed alternately.
//
//	EDDY_BUILT_BIN_DIR=$PWD/bin go test -run '^$' -bench WebhookToAppliedSideBySide -benchtime 1x ./notification-controller/internal/bench/
//
// It is a benchmark, not a test: nothing here asserts a duration. It has its
// own cluster (TestMain), started only when a benchmark is asked for.
package bench

import (
	"flag"
	"os"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
)

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

// TestMain starts the cluster only when a benchmark is asked for: the
// package has no tests, so `make test` costs it nothing.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv))
}
