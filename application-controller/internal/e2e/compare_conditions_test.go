package e2e

import (
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// TestCompareRepeatedAndSharedResourceWarnings: an object declared twice
// gives RepeatedResourceWarning; a second Application rendering an object
// the first one manages gives SharedResourceWarning naming both, with
// Argo CD's messages (argocd-contract §2, §5); both disappear once fixed.
func TestCompareRepeatedAndSharedResourceWarnings(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	files := map[string]string{"dup/one.yaml": twoConfigMaps["app/a.yaml"], "dup/two.yaml": twoConfigMaps["app/a.yaml"]}
	for k, v := range twoConfigMaps {
		files[k] = v
	}
	repo := gitSrv.NewRepo(t, files)
	ns := uniqueName("conditions")
	first := exampleApp(uniqueName("first"), repo.URL(), "dup", ns, nil)
	create(t, first)
	waitApp(t, first, "RepeatedResourceWarning", func() bool {
		return app0Synced(first) && hasCondition(first, argov1.ConditionRepeatedResourceWarning,
			"Resource /ConfigMap/"+ns+"/a appeared 2 times among application resources.")
	})

	second := manualAppWithNamespace(uniqueName("second"), repo.URL(), "app", ns)
	create(t, second)
	waitApp(t, second, "SharedResourceWarning", func() bool {
		return hasCondition(second, argov1.ConditionSharedResourceWarning, "ConfigMap/a is part of applications argocd/"+second.Name+" and "+first.Name)
	})
	if hasCondition(second, argov1.ConditionRepeatedResourceWarning, "") {
		t.Errorf("a RepeatedResourceWarning on an app without repeats: %+v", second.Status.Conditions)
	}

	repo.MustCommit(t, map[string]string{"dup/two.yaml": ""}, "no repeat")
	refresh(t, first)
	waitApp(t, first, "no RepeatedResourceWarning", func() bool {
		return !hasCondition(first, argov1.ConditionRepeatedResourceWarning, "") && app0Synced(first)
	})
}

func app0Synced(a *argov1.Application) bool { return a.Status.Sync.Status == argov1.SyncStatusSynced }
