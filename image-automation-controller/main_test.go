package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/eddyops/eddy/image-automation-controller/internal/controller"
)

// Every flag of Flux's image-automation-controller (main.go and the
// fluxcd/pkg/runtime options it binds, Flux v2.10) parses.
func TestFlagsAcceptFluxImageAutomationControllerFlags(t *testing.T) {
	fs := flag.NewFlagSet("iac", flag.ContinueOnError)
	var c controller.Config
	c.BindFlags(fs)
	args := []string{
		"--metrics-addr=:8080", "--events-addr=http://nc/", "--health-addr=:9440", "--concurrent=6",
		"--default-service-account=sa", "--ssh-kex-algos=curve25519-sha256", "--ssh-hostkey-algos=ssh-ed25519",
		"--kube-api-qps=50", "--kube-api-burst=300", "--log-level=debug", "--log-encoding=json",
		"--enable-leader-election", "--leader-election-lease-duration=35s", "--leader-election-renew-deadline=30s",
		"--leader-election-retry-period=5s", "--leader-election-release-on-cancel=true", "--no-cross-namespace-refs",
		"--min-retry-delay=750ms", "--max-retry-delay=15m", "--watch-all-namespaces=true",
		"--watch-label-selector=sharding.fluxcd.io/key=shard1", "--interval-jitter-percentage=5",
		"--token-cache-max-size=100", "--token-cache-max-duration=1h",
		"--feature-gates=GitShallowClone=true,GitAllBranchReferences=true,GitSparseCheckout=false,CacheSecretsAndConfigMaps=false",
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckFlags(); err != nil {
		t.Fatal(err)
	}
	if c.EventsAddr != "http://nc/" || c.Concurrent != 6 || !c.NoCrossNamespaceRefs {
		t.Errorf("parsed %+v", c)
	}
	fs = flag.NewFlagSet("iac", flag.ContinueOnError)
	c = controller.Config{}
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=GitForcePushBranch=false"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckFlags(); err == nil || !strings.Contains(err.Error(), "GitForcePushBranch=false") {
		t.Errorf("GitForcePushBranch=false: %v", err)
	}
}
