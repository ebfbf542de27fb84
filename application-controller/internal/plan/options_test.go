package plan

import (
	"testing"
)

func TestParseOptionsOperationThenResourceAnnotation(t *testing.T) {
	defaults := Options{Validate: true, ClientSideApplyMigration: true, PrunePropagationPolicy: "foreground"}
	with := func(f func(*Options)) Options {
		o := defaults
		f(&o)
		return o
	}
	cases := []struct {
		name       string
		op         []string
		annotation string // argocd.argoproj.io/sync-options; "-" for a nil object
		want       Options
	}{
		{"defaults", nil, "-", defaults},
		{"app options", []string{"CreateNamespace=true", " PruneLast=true ", "ServerSideApply=true", "Replace=true",
			"ApplyOutOfSyncOnly=true", "RespectIgnoreDifferences=true", "FailOnSharedResource=true",
			"SkipDryRunOnMissingResource=true", "Validate=false", "PrunePropagationPolicy=background", "Force=true"}, "-",
			with(func(o *Options) {
				o.CreateNamespace, o.PruneLast, o.ServerSideApply, o.Replace = true, true, true, true
				o.ApplyOutOfSyncOnly, o.RespectIgnoreDifferences, o.FailOnSharedResource = true, true, true
				o.SkipDryRunOnMissingResource, o.Validate, o.PrunePropagationPolicy, o.Force = true, false, "background", true
			})},
		{"resource annotation wins per key", []string{"ServerSideApply=true", "Validate=false"},
			"ServerSideApply=false, Validate=true,Replace=true",
			with(func(o *Options) { o.Replace = true })},
		{"resource Prune and Delete", nil, "Prune=false,Delete=confirm",
			with(func(o *Options) { o.Prune, o.Delete = "false", "confirm" })},
		{"resource Prune=true lifts app Prune=confirm", []string{"Prune=confirm"}, "Prune=true", defaults},
		{"app-only keys ignored in the annotation", nil,
			"CreateNamespace=true,ApplyOutOfSyncOnly=true,PrunePropagationPolicy=orphan,FailOnSharedResource=true,RespectIgnoreDifferences=true",
			defaults},
		{"values compared exactly", []string{"CreateNamespace=True", "PruneLast", "PrunePropagationPolicy=never"}, "-", defaults},
		{"client-side apply migration off", []string{"ClientSideApplyMigration=false"}, "-",
			with(func(o *Options) { o.ClientSideApplyMigration = false })},
		{"orphan propagation", []string{"PrunePropagationPolicy=orphan"}, "",
			with(func(o *Options) { o.PrunePropagationPolicy = "orphan" })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got Options
			if c.annotation == "-" {
				got = ParseOptions(c.op, nil)
			} else {
				got = ParseOptions(c.op, object("v1", "ConfigMap", "ns", "c", "argocd.argoproj.io/sync-options", c.annotation))
			}
			if got != c.want {
				t.Errorf("ParseOptions = %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestPruneDisabledAndConfirm(t *testing.T) {
	cases := []struct {
		op                []string
		annotation        string
		disabled, confirm bool
	}{
		{nil, "", false, false},
		{[]string{"Prune=false"}, "", true, false},
		{nil, "Prune=false", true, false},
		{[]string{"Prune=false"}, "Prune=confirm", false, true},
		{[]string{"Prune=confirm"}, "", false, true},
		{nil, "PruneLast=true", false, false},
	}
	for _, c := range cases {
		u := object("v1", "ConfigMap", "ns", "c", "argocd.argoproj.io/sync-options", c.annotation)
		if got := PruneDisabled(u, c.op); got != c.disabled {
			t.Errorf("PruneDisabled(%q, %v) = %v", c.annotation, c.op, got)
		}
		if got := PruneNeedsConfirm(u, c.op); got != c.confirm {
			t.Errorf("PruneNeedsConfirm(%q, %v) = %v", c.annotation, c.op, got)
		}
	}
}
