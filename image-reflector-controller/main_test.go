package main

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/eddyops/eddy/image-reflector-controller/internal/controller"
)

// TestFlagsAcceptEveryFluxFlag: every flag of Flux's
// image-reflector-controller (its main.go and the shared runtime flags,
// Flux v2.10) parses, with Flux's defaults for those Eddy uses.
func TestFlagsAcceptEveryFluxFlag(t *testing.T) {
	parse := func(args ...string) controller.Config {
		t.Helper()
		fs := flag.NewFlagSet("irc", flag.ContinueOnError)
		var c controller.Config
		c.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckFlags(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := parse()
	if c.StoragePath != "/data" || c.CompressionThresholdKiB != 64 || c.RequeueDependency != 30*time.Second ||
		c.Concurrent != 4 || c.EventsAddr != "" || c.MetricsAddr != ":8080" || c.HealthAddr != ":9440" {
		t.Errorf("defaults %+v", c)
	}
	flux := []string{
		"--metrics-addr=:8081", "--events-addr=http://nc/", "--health-addr=:9441",
		"--storage-path=/tmp/x", "--storage-value-log-file-size=1024", "--storage-compression-threshold=8",
		"--gc-interval=0", "--concurrent=2", "--requeue-dependency=5s",
		"--kube-api-qps=10", "--kube-api-burst=20", "--log-level=debug", "--log-encoding=console",
		"--enable-leader-election", "--leader-election-lease-duration=10s", "--leader-election-renew-deadline=5s",
		"--leader-election-retry-period=1s", "--leader-election-release-on-cancel=false",
		"--no-cross-namespace-refs", "--min-retry-delay=1s", "--max-retry-delay=1m",
		"--feature-gates=CacheSecretsAndConfigMaps=true,FluxStorage=true",
		"--watch-all-namespaces=false", "--watch-label-selector=a=b",
		"--token-cache-max-size=5", "--token-cache-max-duration=1m", "--default-service-account=sa",
	}
	c = parse(flux...)
	if c.StoragePath != "/tmp/x" || c.CompressionThresholdKiB != 8 || c.RequeueDependency != 5*time.Second || c.Concurrent != 2 {
		t.Errorf("set %+v", c)
	}
	want := "[token-cache-max-size token-cache-max-duration storage-value-log-file-size gc-interval default-service-account]"
	if got := fmt.Sprint(c.IgnoredFlags()); got != want {
		t.Errorf("ignored flags %s, want %s", got, want)
	}
}
