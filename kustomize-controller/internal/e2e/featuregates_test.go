package e2e

import (
	"context"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNonStrictSubstitutionGate: with Flux's
// --feature-gates=StrictPostBuildSubstitutions=false an undefined variable
// without a default is substituted with "" and the Kustomization is Ready
// (strict, the default, fails the build).
func TestNonStrictSubstitutionGate(t *testing.T) {
	startKustomizeController(t, "--feature-gates=StrictPostBuildSubstitutions=false")
	_, k := setup(t, map[string]string{
		"cm.yaml": configMap("settings-${ENV}", "  region: \"${REGION:=eu-west-1}\"\n  missing: \"a${UNDEFINED_VAR}b\"\n"),
	}, func(k *kustomizev1.Kustomization) {
		k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"ENV": "prod"}}
	})
	waitFor(t, k, "Ready", func() bool { return ready(k) })
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: k.Namespace, Name: "settings-prod"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["missing"] != "ab" || cm.Data["region"] != "eu-west-1" {
		t.Errorf("data %v, want missing: ab, region: eu-west-1", cm.Data)
	}
}
