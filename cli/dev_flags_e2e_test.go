package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddyops/eddy/cli/internal/dev"
)

// TestDevUpRefusesControllerFlagsThatMoveOrStopAControllerE2E: before
// anything starts, `eddy dev up --controller-flags` refuses a flag that
// would move an address eddy dev reads (notification-controller's
// --receiver-addr, the alias of --receiverAddr), one that makes the
// controller exit (--help, -h, --version), and "-" or "--", which end the
// controller's flags; checking the flags never contacts the cluster of the
// user's KUBECONFIG.
func TestDevUpRefusesControllerFlagsThatMoveOrStopAControllerE2E(t *testing.T) {
	_, eddy := built(t)
	var requests atomic.Int32
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "not a cluster", http.StatusServiceUnavailable)
	}))
	defer cluster.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: `+cluster.URL+`}}]
users: [{name: admin, user: {token: secret}}]
contexts: [{name: prod, context: {cluster: prod, user: admin}}]
current-context: prod
`), 0o600); err != nil {
		t.Fatal(err)
	}
	repo, state := substRepo(t), t.TempDir()
	cases := map[string]string{
		"notification-controller=--receiver-addr=127.0.0.1:1": "eddy dev sets --receiver-addr itself",
		"kustomize-controller=--help":                         "--help makes the controller exit",
		"helm-controller=-h":                                  "--h makes the controller exit",
		"source-controller=--version":                         "--version makes the controller exit",
		"kustomize-controller=--":                             `"--" is not a flag`,
		"kustomize-controller=--concurrent=2 - --no-such":     `"-" is not a flag`,
	}
	for value, want := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, eddy, "dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev", "--controller-flags", value)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("$ eddy dev up --controller-flags %s   (err=%v)\n%s", value, err, out)
		if err == nil {
			u := &user{t: t, eddy: eddy, state: state}
			u.run("dev", "down")
			t.Fatalf("--controller-flags %s started an environment", value)
		}
		oneLineError(t, string(out), "--controller-flags", want)
	}
	if s, err := dev.ReadState(filepath.Join(state, "eddy", "dev")); err == nil {
		t.Errorf("a refused --controller-flags started an environment: %+v", s)
	}
	if n := requests.Load(); n > 0 {
		t.Errorf("checking the flags sent %d requests to the cluster of KUBECONFIG", n)
	}
}

// TestDevUpExplainsKeptControllerFlagsItRefusesE2E: flags kept from an
// earlier `eddy dev up` that the controller now refuses (after an upgrade
// dropped a feature gate, say) fail a plain `eddy dev up` saying they were
// kept and how to clear them; clearing them lets it go past the check.
func TestDevUpExplainsKeptControllerFlagsItRefusesE2E(t *testing.T) {
	u := newUser(t)
	repo := substRepo(t)
	if err := os.MkdirAll(u.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u.dir(), "controller-flags.json"), []byte(`{"kustomize-controller": ["--feature-gates=Dropped=true"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	oneLineError(t, u.fails("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev"),
		"kustomize-controller refuses them", "kept from an earlier `eddy dev up`", "--controller-flags kustomize-controller=")
	// Typed this time: no such hint.
	out := u.fails("dev", "up", "--detach", "--repo", repo, "--path", "./clusters/dev", "--controller-flags", "kustomize-controller=--feature-gates=Typed=true")
	if strings.Contains(out, "kept from") {
		t.Errorf("flags given on the command line are said to be kept:\n%s", out)
	}
}
