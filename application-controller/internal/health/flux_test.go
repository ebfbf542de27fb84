package health

import (
	"fmt"
	"testing"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// flux is a Flux object with the given extra spec and conditions ("" for
// an empty status).
func flux(apiVersion, kind, spec, conds string) string {
	status := "{}"
	if conds != "" {
		status = "{conditions: " + conds + "}"
	}
	return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: x, namespace: flux-system}\nspec: {interval: 1m%s}\nstatus: %s",
		apiVersion, kind, spec, status)
}

func TestFluxKindsHealthAsArgoCDsScripts(t *testing.T) {
	const ks = "kustomize.toolkit.fluxcd.io/v1"
	const git = "source.toolkit.fluxcd.io/v1"
	const hr = "helm.toolkit.fluxcd.io/v2"
	runHealth(t, []healthCase{
		{name: "Kustomization suspended", want: v1alpha1.HealthSuspended, msgHas: "Kustomization is suspended",
			yaml: flux(ks, "Kustomization", ", suspend: true", `[{type: Ready, status: "True", reason: ReconciliationSucceeded}]`)},
		{name: "Kustomization without conditions", want: v1alpha1.HealthProgressing, yaml: flux(ks, "Kustomization", "", "")},
		{name: "Kustomization reconciling", want: v1alpha1.HealthProgressing, msgHas: "Progressing", yaml: flux(ks, "Kustomization", "",
			`[{type: Reconciling, status: "True", reason: Progressing}, {type: Ready, status: "Unknown", reason: Progressing}]`)},
		{name: "Kustomization ready", want: v1alpha1.HealthHealthy, msgHas: "ReconciliationSucceeded",
			yaml: flux(ks, "Kustomization", "", `[{type: Ready, status: "True", reason: ReconciliationSucceeded}]`)},
		{name: "Kustomization failed", want: v1alpha1.HealthDegraded, msgHas: "BuildFailed",
			yaml: flux(ks, "Kustomization", "", `[{type: Ready, status: "False", reason: BuildFailed}]`)},
		{name: "GitRepository ready with artifact", want: v1alpha1.HealthHealthy, yaml: flux(git, "GitRepository", "",
			`[{type: Ready, status: "True", reason: Succeeded}, {type: ArtifactInStorage, status: "True", reason: Succeeded}]`)},
		{name: "GitRepository without artifact", want: v1alpha1.HealthDegraded, msgHas: "GitOperationFailed",
			yaml: flux(git, "GitRepository", "", `[{type: Ready, status: "False", reason: GitOperationFailed}]`)},
		{name: "GitRepository artifact outdated", want: v1alpha1.HealthDegraded, msgHas: "GitOperationFailed NewRevision",
			yaml: flux(git, "GitRepository", "", `[{type: Ready, status: "False", reason: GitOperationFailed},
  {type: ArtifactOutdated, status: "True", reason: NewRevision}, {type: ArtifactInStorage, status: "True", reason: Succeeded}]`)},
		{name: "HelmRepository of type oci", want: v1alpha1.HealthHealthy, yaml: flux(git, "HelmRepository", ", type: oci", "")},
		{name: "HelmRelease released", want: v1alpha1.HealthHealthy, yaml: flux(hr, "HelmRelease", "",
			`[{type: Ready, status: "True", reason: InstallSucceeded}, {type: Released, status: "True", reason: InstallSucceeded}]`)},
		{name: "HelmRelease released and tested", want: v1alpha1.HealthHealthy, yaml: flux(hr, "HelmRelease", "",
			`[{type: Ready, status: "True", reason: TestSucceeded}, {type: Released, status: "True", reason: InstallSucceeded},
  {type: TestSuccess, status: "True", reason: TestSucceeded}]`)},
		{name: "HelmRelease install failed", want: v1alpha1.HealthDegraded, msgHas: "InstallFailed", yaml: flux(hr, "HelmRelease", "",
			`[{type: Ready, status: "False", reason: InstallFailed}, {type: Released, status: "False", reason: InstallFailed}]`)},
	})
}
