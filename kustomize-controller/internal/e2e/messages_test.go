package e2e

import (
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSubstituteFromMissingNamesKindAndName: the binary's message for a
// missing substituteFrom ConfigMap keeps the API server's kind and name, in
// Flux's wording.
func TestSubstituteFromMissingNamesKindAndName(t *testing.T) {
	startKustomizeController(t)
	_, k := setup(t, map[string]string{"cm.yaml": configMap("settings", "  env: \"${ENV}\"\n")}, func(k *kustomizev1.Kustomization) {
		k.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "cluster-overrides"}}}
	})
	want := `substitute from 'ConfigMap/cluster-overrides' error: configmaps "cluster-overrides" not found`
	waitFor(t, k, "Ready=False "+meta.BuildFailedReason, func() bool {
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == meta.BuildFailedReason
	})
	if c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition); c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
}
