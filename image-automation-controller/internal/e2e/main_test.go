// Package e2e runs the seed flow end to end against the built binaries:
// source-controller, kustomize-controller, image-reflector-controller and
// image-automation-controller on a kwok cluster, with an in-process
// registry and a real Git server.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"k8s.io/apimachinery/pkg/util/wait"
)

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

// controllers are the four binaries of the seed flow, in start order.
var controllers = []string{"source-controller", "kustomize-controller", "image-reflector-controller", "image-automation-controller"}

func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}},
		testenv.WithGitServer(&gitSrv), startControllers)
}

// startControllers runs the four controllers for the whole package, with
// short retry delays so that a transient failure does not cost the test
// its time budget.
func startControllers(e *testenv.Environment) (func(), error) {
	dir, err := os.MkdirTemp("", "eddy-seedflow-")
	if err != nil {
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	retry := []string{"--min-retry-delay=200ms", "--max-retry-delay=2s"}
	dependency := append([]string{"--requeue-dependency=1s"}, retry...)
	args := map[string][]string{
		"source-controller": append([]string{"--storage-path=" + filepath.Join(dir, "source"),
			fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port)}, dependency...),
		"kustomize-controller":        dependency,
		"image-reflector-controller":  append([]string{"--storage-path=" + filepath.Join(dir, "reflector")}, dependency...),
		"image-automation-controller": retry,
	}
	procs, err := testenv.StartControllers(e, dir, controllers, args)
	if err != nil {
		return nil, err
	}
	return procs.Stop, nil
}

// pollUntil waits up to testenv.WaitTimeout for cond, checking every
// 20ms, and returns when it held; it fails t with what on timeout.
func pollUntil(t *testing.T, what string, cond func() bool) time.Time {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, testenv.WaitTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
	return time.Now()
}
