package controllerkit

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestCompatFlags: an ignored Flux flag parses with Flux's type and is
// reported only when given (and, with a when, only for those values); a
// refused one fails CheckFlags with one line naming it, except at its
// default.
func TestCompatFlags(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		parseErr   bool
		ignored    []string
		refusedErr string
	}{
		{name: "none given", ignored: nil},
		{name: "shared token cache flag", args: []string{"--token-cache-max-size=5"}, ignored: []string{"token-cache-max-size"}},
		{name: "int of the wrong type", args: []string{"--token-cache-max-size=many"}, parseErr: true},
		{name: "duration of the wrong type", args: []string{"--token-cache-max-duration=soon"}, parseErr: true},
		{name: "invalid selector", args: []string{"--watch-configs-label-selector=a in ("}, parseErr: true},
		{name: "selector at Flux's default is not reported", args: []string{"--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled"}},
		{name: "bool implemented value is not reported", args: []string{"--remote=true"}},
		{name: "bare bool", args: []string{"--remote"}},
		{name: "bool other value is reported", args: []string{"--remote=false"}, ignored: []string{"remote"}},
		{name: "bool of the wrong type", args: []string{"--remote=maybe"}, parseErr: true},
		{name: "refused at its default", args: []string{"--secret="}},
		{name: "refused", args: []string{"--secret=key"}, refusedErr: "--secret=key: no global key"},
		{name: "repeated list", args: []string{"--manager=a", "--manager=b"}, refusedErr: "--manager=a,b: no managers"},
		{name: "Flux gate at Eddy's behaviour", args: []string{"--feature-gates=Watchers=true,Lookups=false"}},
		{name: "Flux gate ignored", args: []string{"--feature-gates=Watchers=false"}, ignored: []string{"feature-gates=Watchers=false"}},
		{name: "Flux gate refused", args: []string{"--feature-gates=CacheSecretsAndConfigMaps=true,Lookups=true"},
			refusedErr: "--feature-gates=Lookups=true: no lookups"},
		{name: "workload identity gate refused", args: []string{"--feature-gates=ObjectLevelWorkloadIdentity=true"},
			refusedErr: "--feature-gates=ObjectLevelWorkloadIdentity=true: Eddy does not implement object-level workload identity (spec.serviceAccountName with a spec.provider is refused; the controller's own identity serves the providers)"},
		{name: "unknown gate still refused", args: []string{"--feature-gates=NoSuchGate=true"}, parseErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var o Options
			o.BindFlags(fs, 4)
			o.IgnoreFlag(fs, BoolFlag, "remote", "false", "always refused", func(v string) bool { return v == "false" })
			o.RefuseFlag(fs, StringFlag, "secret", "", "no global key")
			o.RefuseFlag(fs, ListFlag, "manager", "", "no managers")
			o.FluxGate("Watchers", false, false, false, "no watchers")
			o.FluxGate("Lookups", false, true, true, "no lookups")
			err := fs.Parse(c.args)
			if (err != nil) != c.parseErr {
				t.Fatalf("parse error %v, want error: %t", err, c.parseErr)
			}
			if err != nil {
				return
			}
			if got := o.IgnoredFlags(); !slices.Equal(got, c.ignored) {
				t.Errorf("ignored %v, want %v", got, c.ignored)
			}
			err = o.CheckFlags()
			if got := ""; err != nil {
				got = err.Error()
				if got != c.refusedErr || strings.Contains(got, "\n") {
					t.Errorf("CheckFlags: %q, want %q", got, c.refusedErr)
				}
			} else if c.refusedErr != "" {
				t.Errorf("CheckFlags: nil, want %q", c.refusedErr)
			}
		})
	}
}

// TestCompatFlagsHelpSaysAccepted: an ignored flag's help text says it is
// accepted for Flux compatibility and what Eddy does instead.
func TestCompatFlagsHelpSaysAccepted(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var o Options
	o.BindFlags(fs, 4)
	if u := fs.Lookup("token-cache-max-size").Usage; !strings.HasPrefix(u, "accepted for Flux compatibility: Eddy caches each provider") {
		t.Errorf("usage %q", u)
	}
	if d := fs.Lookup("watch-configs-label-selector").DefValue; d != "reconcile.fluxcd.io/watch=Enabled" {
		t.Errorf("default %q, want Flux's", d)
	}
}
