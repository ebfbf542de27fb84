package controller

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// TestBinaryStarts builds helm-controller and runs it against the cluster:
// main builds its manager with NewManager and becomes ready (/readyz). The
// same constructor, given the same flags in-process, starts and syncs.
func TestBinaryStarts(t *testing.T) {
	work := t.TempDir()
	exe, err := testenv.BuildController(ControllerName, work)
	if err != nil {
		t.Fatal(err)
	}
	p, err := testenv.StartController(env, exe, filepath.Join(work, "helm-controller.log"), "--log-level=debug")
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if b, _ := os.ReadFile(p.LogPath); len(b) == 0 {
		t.Error("helm-controller logged nothing; want its start-up lines")
	}

	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--metrics-addr=0", "--health-addr=0"}); err != nil {
		t.Fatal(err)
	}
	c.RESTConfig = env.Config
	mgr, err := NewManager(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Error("the in-process manager's cache did not sync")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
}
