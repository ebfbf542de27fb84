package testenv_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
)

// TestControllerBinariesRefuseUnknownFeatureGates: each controller binary
// takes Flux's --feature-gates flag and refuses, at start-up with a non-zero
// exit and a message naming it, a gate it does not implement; kustomize-controller
// accepts StrictPostBuildSubstitutions, which the others refuse.
func TestControllerBinariesRefuseUnknownFeatureGates(t *testing.T) {
	testenv.EachController(t, func(t *testing.T, name, exe string) {
		type gate struct{ arg, unknown string }
		gates := []gate{{"NoSuchGate=true", "NoSuchGate"}, {"CacheSecretsAndConfigMaps=true,NoSuchGate=false", "NoSuchGate"}}
		if name != "kustomize-controller" {
			gates = append(gates, gate{"StrictPostBuildSubstitutions=false", "StrictPostBuildSubstitutions"})
		}
		for _, g := range gates {
			// A binary that got past its flags would fail on the missing
			// kubeconfig instead, so the message proves where it stopped.
			out, err := exec.Command(exe, "--feature-gates="+g.arg, "--kubeconfig=/nonexistent").CombinedOutput()
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() == 0 {
				t.Errorf("--feature-gates=%s: exit %v, want non-zero; output:\n%s", g.arg, err, out)
			}
			if want := "feature-gate '" + g.unknown + "' not supported"; !strings.Contains(string(out), want) {
				t.Errorf("--feature-gates=%s: output lacks %q:\n%s", g.arg, want, out)
			}
		}
	})
}
