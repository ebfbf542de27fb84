package runtime

import (
	"flag"
	"testing"
	"time"
)

// TestFluxDefaults pins the defaults that Flux's deployment manifests rely on
// (contract §9).
func TestFluxDefaults(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, 4)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"metrics-addr", o.MetricsAddr, ":8080"},
		{"health-addr", o.HealthAddr, ":9440"},
		{"enable-leader-election", o.EnableLeaderElection, false},
		{"leader-election-lease-duration", o.LeaseDuration, 35 * time.Second},
		{"leader-election-renew-deadline", o.RenewDeadline, 30 * time.Second},
		{"leader-election-retry-period", o.RetryPeriod, 5 * time.Second},
		{"log-level", o.LogLevel, "info"},
		{"log-encoding", o.LogEncoding, "json"},
		{"concurrent", o.Concurrent, 4},
		{"watch-all-namespaces", o.WatchAllNamespaces, true},
		{"watch-label-selector", o.WatchLabelSelector, ""},
		{"kube-api-qps", o.KubeAPIQPS, 50.0},
		{"kube-api-burst", o.KubeAPIBurst, 300},
		{"min-retry-delay", o.MinRetryDelay, 750 * time.Millisecond},
		{"max-retry-delay", o.MaxRetryDelay, 15 * time.Minute},
		{"interval-jitter-percentage", o.IntervalJitter, 5.0},
		{"no-cross-namespace-refs", o.NoCrossNamespaceRefs, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("--%s default %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSetupLoggerRejectsUnknownValues(t *testing.T) {
	for _, o := range []Options{{LogLevel: "loud", LogEncoding: "json"}, {LogLevel: "info", LogEncoding: "xml"}} {
		if err := o.SetupLogger(); err == nil {
			t.Errorf("SetupLogger accepted %+v", o)
		}
	}
}
