package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// fluxKinds lists the Flux kinds whose health scripts Argo CD bundles
// (resource_customizations/*.toolkit.fluxcd.io) that share one shape, with
// the conditions that must all be True for Healthy.
var fluxKinds = map[[2]string][]string{
	{"kustomize.toolkit.fluxcd.io", "Kustomization"}:     {"Ready"},
	{"image.toolkit.fluxcd.io", "ImageUpdateAutomation"}: {"Ready"},
	{"helm.toolkit.fluxcd.io", "HelmRelease"}:            {"Ready", "Released"},
	{"source.toolkit.fluxcd.io", "GitRepository"}:        {"Ready", "ArtifactInStorage"},
	{"source.toolkit.fluxcd.io", "OCIRepository"}:        {"Ready", "ArtifactInStorage"},
	{"source.toolkit.fluxcd.io", "Bucket"}:               {"Ready", "ArtifactInStorage"},
	{"source.toolkit.fluxcd.io", "HelmChart"}:            {"Ready", "ArtifactInStorage"},
	{"source.toolkit.fluxcd.io", "HelmRepository"}:       {"Ready", "ArtifactInStorage"},
}

// fluxRule returns the rule for a Flux kind of fluxKinds, nil for any
// other kind.
func fluxRule(group, kind string) rule {
	needed, found := fluxKinds[[2]string{group, kind}]
	if !found {
		return nil
	}
	return func(u *unstructured.Unstructured) (v1alpha1.HealthStatus, error) {
		return fluxHealth(u, needed)
	}
}

// fluxHealth behaves as the Flux health scripts Argo CD bundles:
// spec.suspend ⇒ Suspended; no conditions yet ⇒ Progressing; Ready=Unknown
// while Reconciling=True ⇒ Progressing; every needed condition True ⇒
// Healthy; anything else (Ready=False, a stalled reconciliation) ⇒
// Degraded. The message is Ready's reason, followed for sources by
// ArtifactOutdated's when True. A HelmRepository of type oci keeps no
// status and is Healthy. Unlike Argo CD's HelmRelease script, which counts
// exactly two True conditions, a release whose tests passed (TestSuccess
// also True) stays Healthy.
func fluxHealth(u *unstructured.Unstructured, needed []string) (v1alpha1.HealthStatus, error) {
	if suspend, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspend {
		return status(v1alpha1.HealthSuspended, u.GetKind()+" is suspended"), nil
	}
	if t, _, _ := unstructured.NestedString(u.Object, "spec", "type"); u.GetKind() == "HelmRepository" && t == "oci" {
		return status(v1alpha1.HealthHealthy, "A HelmRepository of type oci keeps no status"), nil
	}
	conds, err := conditionsAt(u, "status", "conditions")
	if err != nil {
		return v1alpha1.HealthStatus{}, err
	}
	if len(conds) == 0 {
		return status(v1alpha1.HealthProgressing, "Waiting for the controller to report"), nil
	}
	byType := map[string]condition{}
	for _, c := range conds {
		byType[c.Type] = c
	}
	msg := byType["Ready"].Reason
	if c := byType["ArtifactOutdated"]; c.Status == "True" {
		msg += " " + c.Reason
	}
	if byType["Ready"].Status == "Unknown" && byType["Reconciling"].Status == "True" {
		return status(v1alpha1.HealthProgressing, msg), nil
	}
	for _, t := range needed {
		if byType[t].Status != "True" {
			return status(v1alpha1.HealthDegraded, msg), nil
		}
	}
	return status(v1alpha1.HealthHealthy, msg), nil
}
