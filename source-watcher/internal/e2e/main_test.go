// Package e2e runs the built source-controller, source-watcher and
// kustomize-controller binaries, as users run them, against the local
// cluster and a real Git server: a GitRepository's artifact goes through an
// ArtifactGenerator into an ExternalArtifact that a Kustomization applies.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env    *testenv.Environment
	work   string // binaries, logs and storage
	gitSrv *testenv.GitServer
	// swStorage is source-watcher's --storage-path.
	swStorage string
)

// TestMain starts the api profile (ConfigMaps need no nodes), a Git server
// and the three built controllers.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), startControllers)
}

func startControllers(e *testenv.Environment) (func(), error) {
	var err error
	if work, err = os.MkdirTemp("", "eddy-sw-e2e-"); err != nil {
		return nil, err
	}
	var stops []func()
	cleanup := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		os.RemoveAll(work)
	}
	start := func(name string, args ...string) error {
		exe, err := testenv.BuildController(name, work)
		if err != nil {
			return err
		}
		p, err := testenv.StartController(e, exe, filepath.Join(work, name+".log"), args...)
		if err != nil {
			return err
		}
		stops = append(stops, p.Stop)
		return nil
	}
	storage := func(name string) ([]string, error) {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		return []string{"--storage-path=" + filepath.Join(work, name), fmt.Sprintf("--storage-addr=127.0.0.1:%d", port),
			fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port)}, nil
	}
	swStorage = filepath.Join(work, "source-watcher")
	for _, c := range []struct {
		name  string
		store bool
		args  []string
	}{
		{"source-controller", true, nil},
		{"source-watcher", true, []string{"--requeue-dependency=1s"}},
		{"kustomize-controller", false, []string{"--feature-gates=ExternalArtifact=true"}},
	} {
		args := c.args
		if c.store {
			s, err := storage(c.name)
			if err != nil {
				cleanup()
				return nil, err
			}
			args = append(s, args...)
		}
		if err := start(c.name, args...); err != nil {
			cleanup()
			return nil, err
		}
	}
	return cleanup, nil
}

// waitFor re-reads obj until cond holds (testenv.WaitFor).
func waitFor(t *testing.T, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, env.Client, obj, what, cond)
}

// readyCondition returns obj's Ready condition, nil if none.
func readyCondition(obj *swv1.ArtifactGenerator) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
}

var ctx = context.Background()
