package controllerkit

import (
	"flag"
	"io"
	"strings"
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
		{"leader-election-release-on-cancel", o.ReleaseOnCancel, true},
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

// TestLeaderElectionID: one lease per shard, named as Flux names it
// (fluxcd/pkg/runtime/leaderelection.GenerateID: the first 8 hex digits of
// the selector's SHA-256, here computed with `printf %s … | sha256sum`).
func TestLeaderElectionID(t *testing.T) {
	for _, c := range []struct{ selector, want string }{
		{"", "kustomize-controller-leader-election"},
		{"sharding.fluxcd.io/key in (shard1)", "kustomize-controller-leader-election-7ee98f29"},
	} {
		if got := LeaderElectionID("kustomize-controller", c.selector); got != c.want {
			t.Errorf("LeaderElectionID(%q) = %q, want %q", c.selector, got, c.want)
		}
	}
	seen := map[string]string{}
	for _, sel := range []string{"", "!sharding.fluxcd.io/key", "sharding.fluxcd.io/key in (shard1)", "sharding.fluxcd.io/key in (shard2)", "sharding.fluxcd.io/key=shard1"} {
		id := LeaderElectionID("source-controller", sel)
		if other, ok := seen[id]; ok {
			t.Errorf("selectors %q and %q share the lease %q", other, sel, id)
		}
		seen[id] = sel
	}
}

func TestSetupLoggerRejectsUnknownValues(t *testing.T) {
	for _, o := range []Options{{LogLevel: "loud", LogEncoding: "json"}, {LogLevel: "info", LogEncoding: "xml"}} {
		if err := o.SetupLogger(); err == nil {
			t.Errorf("SetupLogger accepted %+v", o)
		}
	}
}

// TestFeatureGates: Flux's --feature-gates syntax over the controller's known
// gates; an unknown gate or a non-boolean value fails parsing (so the binary
// exits non-zero at start-up).
func TestFeatureGates(t *testing.T) {
	parse := func(gates []string, args ...string) (*Options, error) {
		var o Options
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs, 4, gates...)
		return &o, fs.Parse(args)
	}
	o, err := parse([]string{StrictPostBuildSubstitutions})
	if err != nil || !o.FeatureGates.Enabled(StrictPostBuildSubstitutions) || o.FeatureGates.Enabled(CacheSecretsAndConfigMaps) {
		t.Errorf("defaults: strict %v, cache %v (%v); want true, false",
			o.FeatureGates.Enabled(StrictPostBuildSubstitutions), o.FeatureGates.Enabled(CacheSecretsAndConfigMaps), err)
	}
	if o.clientOptions().Cache == nil {
		t.Error("Secrets and ConfigMaps are cached by default")
	}
	var unbound Options
	if !unbound.FeatureGates.Enabled(StrictPostBuildSubstitutions) || unbound.clientOptions().Cache == nil {
		t.Error("Options not bound to flags do not have Flux's defaults")
	}
	o, err = parse([]string{StrictPostBuildSubstitutions}, "--feature-gates=StrictPostBuildSubstitutions=false, CacheSecretsAndConfigMaps=true")
	if err != nil || o.FeatureGates.Enabled(StrictPostBuildSubstitutions) || !o.FeatureGates.Enabled(CacheSecretsAndConfigMaps) {
		t.Errorf("set: %v", err)
	}
	if o.clientOptions().Cache != nil {
		t.Error("CacheSecretsAndConfigMaps=true still reads Secrets uncached")
	}
	// kustomize-controller's gates: CancelHealthCheckOnNewRevision defaults
	// to true (beyond Flux) and can be turned off.
	kustomize := []string{StrictPostBuildSubstitutions, CancelHealthCheckOnNewRevision}
	if o, err = parse(kustomize); err != nil || !o.FeatureGates.Enabled(CancelHealthCheckOnNewRevision) || !unbound.FeatureGates.Enabled(CancelHealthCheckOnNewRevision) {
		t.Errorf("CancelHealthCheckOnNewRevision is off by default (%v); want on", err)
	}
	if o, err = parse(kustomize, "--feature-gates=CancelHealthCheckOnNewRevision=false"); err != nil || o.FeatureGates.Enabled(CancelHealthCheckOnNewRevision) {
		t.Errorf("CancelHealthCheckOnNewRevision=false: %v", err)
	}
	// The opt-in gates of kustomize-controller and helm-controller are off
	// by default, as Flux's.
	for _, g := range []string{DisableCommitStatusEvent, DisableChartDigestTracking} {
		if o, err = parse([]string{g}); err != nil || o.FeatureGates.Enabled(g) || unbound.FeatureGates.Enabled(g) {
			t.Errorf("%s is on by default (%v); want off", g, err)
		}
		if o, err = parse([]string{g}, "--feature-gates="+g+"=true"); err != nil || !o.FeatureGates.Enabled(g) {
			t.Errorf("%s=true: %v", g, err)
		}
	}
	for _, c := range []struct {
		gates []string
		arg   string
		want  string
	}{
		{nil, "--feature-gates=StrictPostBuildSubstitutions=false", "feature-gate 'StrictPostBuildSubstitutions' not supported"},
		{nil, "--feature-gates=CancelHealthCheckOnNewRevision=false", "feature-gate 'CancelHealthCheckOnNewRevision' not supported"},
		{[]string{StrictPostBuildSubstitutions}, "--feature-gates=NoSuchGate=true", "feature-gate 'NoSuchGate' not supported"},
		{[]string{StrictPostBuildSubstitutions}, "--feature-gates=StrictPostBuildSubstitutions=maybe", "invalid value of StrictPostBuildSubstitutions: maybe"},
		{[]string{StrictPostBuildSubstitutions}, "--feature-gates=StrictPostBuildSubstitutions", "missing bool value for StrictPostBuildSubstitutions"},
	} {
		if _, err := parse(c.gates, c.arg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.arg, err, c.want)
		}
	}
}
