package plan

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object builds an object of apiVersion/kind named ns/name with the
// annotations given as key, value pairs.
func object(apiVersion, kind, ns, name string, kv ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if len(kv) > 0 {
		ann := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			ann[kv[i]] = kv[i+1]
		}
		u.SetAnnotations(ann)
	}
	return u
}

func job(name string, kv ...string) *unstructured.Unstructured {
	return object("batch/v1", "Job", "ns", name, kv...)
}

func TestHookPhasesFromArgoAndHelmAnnotations(t *testing.T) {
	cases := []struct {
		name   string
		kv     []string
		phases []string
		isHook bool
	}{
		{"plain object", nil, nil, false},
		{"argo PreSync", []string{"argocd.argoproj.io/hook", "PreSync"}, []string{"PreSync"}, true},
		{"argo list in run order, trimmed, repeats dropped",
			[]string{"argocd.argoproj.io/hook", " PostSync, PreSync,PostSync "}, []string{"PreSync", "PostSync"}, true},
		{"argo SyncFail", []string{"argocd.argoproj.io/hook", "SyncFail"}, []string{"SyncFail"}, true},
		{"argo PreDelete", []string{"argocd.argoproj.io/hook", "PreDelete"}, []string{"PreDelete"}, true},
		{"argo Skip is a hook with no phase", []string{"argocd.argoproj.io/hook", "Skip"}, nil, true},
		{"argo Skip with a phase runs in it", []string{"argocd.argoproj.io/hook", "Skip,Sync"}, []string{"Sync"}, true},
		{"argo unknown value is a hook with no phase", []string{"argocd.argoproj.io/hook", "Later"}, nil, true},
		{"argo wins over helm",
			[]string{"argocd.argoproj.io/hook", "Sync", "helm.sh/hook", "post-install"}, []string{"Sync"}, true},
		{"helm pre-install and pre-upgrade are PreSync",
			[]string{"helm.sh/hook", "pre-install,pre-upgrade"}, []string{"PreSync"}, true},
		{"helm post-upgrade is PostSync", []string{"helm.sh/hook", "post-upgrade"}, []string{"PostSync"}, true},
		{"helm pre-delete is PreDelete", []string{"helm.sh/hook", "pre-delete"}, []string{"PreDelete"}, true},
		{"helm post-delete is PostDelete", []string{"helm.sh/hook", "post-delete"}, []string{"PostDelete"}, true},
		{"helm test is a hook with no phase", []string{"helm.sh/hook", "test"}, nil, true},
		{"helm pre-rollback is a hook with no phase", []string{"helm.sh/hook", "pre-rollback"}, nil, true},
		{"helm crd-install is not a hook", []string{"helm.sh/hook", "crd-install"}, nil, false},
		{"argo unknown value falls back to helm phases",
			[]string{"argocd.argoproj.io/hook", "Later", "helm.sh/hook", "post-install"}, []string{"PostSync"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			phases, isHook := Hook(job("j", c.kv...))
			if !slices.Equal(phases, c.phases) || isHook != c.isHook {
				t.Errorf("Hook = %v, %v; want %v, %v", phases, isHook, c.phases, c.isHook)
			}
		})
	}
	if phases, isHook := Hook(nil); phases != nil || isHook {
		t.Errorf("Hook(nil) = %v, %v", phases, isHook)
	}
}

func TestSkipOnlyWhenSkipIsTheOnlyHookValue(t *testing.T) {
	cases := []struct {
		kv   []string
		want bool
	}{
		{nil, false},
		{[]string{"argocd.argoproj.io/hook", "Skip"}, true},
		{[]string{"argocd.argoproj.io/hook", " Skip , Skip"}, true},
		{[]string{"argocd.argoproj.io/hook", "Skip,PreSync"}, false},
		{[]string{"argocd.argoproj.io/hook", "PreSync"}, false},
		{[]string{"helm.sh/hook", "test"}, false},
	}
	for _, c := range cases {
		if got := Skip(job("j", c.kv...)); got != c.want {
			t.Errorf("Skip(%v) = %v, want %v", c.kv, got, c.want)
		}
	}
}

func TestWaveFromSyncWaveElseHelmWeightElseZero(t *testing.T) {
	cases := []struct {
		kv   []string
		want int
	}{
		{nil, 0},
		{[]string{"argocd.argoproj.io/sync-wave", "3"}, 3},
		{[]string{"argocd.argoproj.io/sync-wave", "-5"}, -5},
		{[]string{"helm.sh/hook-weight", "2"}, 2},
		{[]string{"argocd.argoproj.io/sync-wave", "1", "helm.sh/hook-weight", "2"}, 1},
		{[]string{"argocd.argoproj.io/sync-wave", "one", "helm.sh/hook-weight", "-2"}, -2},
		{[]string{"argocd.argoproj.io/sync-wave", "x", "helm.sh/hook-weight", "y"}, 0},
	}
	for _, c := range cases {
		if got := Wave(object("v1", "Service", "ns", "s", c.kv...)); got != c.want {
			t.Errorf("Wave(%v) = %d, want %d", c.kv, got, c.want)
		}
	}
}

func TestDeletePoliciesDefaultToBeforeHookCreation(t *testing.T) {
	cases := []struct {
		kv   []string
		want []string
	}{
		{nil, []string{PolicyBeforeHookCreation}},
		{[]string{"argocd.argoproj.io/hook-delete-policy", "HookSucceeded"}, []string{PolicyHookSucceeded}},
		{[]string{"argocd.argoproj.io/hook-delete-policy", "HookSucceeded, HookFailed"},
			[]string{PolicyHookSucceeded, PolicyHookFailed}},
		{[]string{"helm.sh/hook-delete-policy", "before-hook-creation,hook-succeeded"},
			[]string{PolicyBeforeHookCreation, PolicyHookSucceeded}},
		{[]string{"argocd.argoproj.io/hook-delete-policy", "HookFailed", "helm.sh/hook-delete-policy", "hook-failed,hook-succeeded"},
			[]string{PolicyHookFailed, PolicyHookSucceeded}},
		{[]string{"argocd.argoproj.io/hook-delete-policy", "Never"}, []string{PolicyBeforeHookCreation}},
	}
	for _, c := range cases {
		if got := DeletePolicies(job("j", c.kv...)); !slices.Equal(got, c.want) {
			t.Errorf("DeletePolicies(%v) = %v, want %v", c.kv, got, c.want)
		}
	}
}

func TestHookNameAppendsRevisionPhaseAndStart(t *testing.T) {
	start := time.Date(2026, 12, 3, 16, 0, 0, 0, time.FixedZone("x", 3600))
	cases := []struct {
		gen, rev, phase, want string
	}{
		{"upgrade-sql-schema", "0d521c6e2f1b", "PreSync", "upgrade-sql-schema0d521c6-presync-1796310000"},
		{"db-", "abc", "PostSync", "db-abc-postsync-1796310000"},
		{"db-", "1234567", "Sync", "db-1234567-sync-1796310000"},
		{"chart-", "V1.2.0-RC", "SyncFail", "chart-v1.2.0--syncfail-1796310000"},
		{"x-", "", "Sync", "x--sync-1796310000"},
	}
	for _, c := range cases {
		if got := HookName(c.gen, c.rev, c.phase, start); got != c.want {
			t.Errorf("HookName(%q, %q, %q) = %q, want %q", c.gen, c.rev, c.phase, got, c.want)
		}
	}
}

func TestIgnoreExtraneousAndIgnoreHealthAnnotations(t *testing.T) {
	cases := []struct {
		kv               []string
		extraneous, heal bool
	}{
		{nil, false, false},
		{[]string{"argocd.argoproj.io/compare-options", "IgnoreExtraneous"}, true, false},
		{[]string{"argocd.argoproj.io/compare-options", "ServerSideDiff=true, IgnoreExtraneous"}, true, false},
		{[]string{"argocd.argoproj.io/compare-options", "ServerSideDiff=true"}, false, false},
		{[]string{"argocd.argoproj.io/ignore-healthcheck", "true"}, false, true},
		{[]string{"argocd.argoproj.io/ignore-healthcheck", "false"}, false, false},
	}
	for _, c := range cases {
		u := object("v1", "ConfigMap", "ns", "c", c.kv...)
		if got := IgnoreExtraneous(u); got != c.extraneous {
			t.Errorf("IgnoreExtraneous(%v) = %v", c.kv, got)
		}
		if got := IgnoreHealth(u); got != c.heal {
			t.Errorf("IgnoreHealth(%v) = %v", c.kv, got)
		}
	}
}
