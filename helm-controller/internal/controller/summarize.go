package controller

import (
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/action"
	"github.com/eddyops/eddy/helm-controller/internal/postrender"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// summarize writes Ready from the first of [Remediated, TestSuccess (tests
// enabled and not ignored), Released] present, newest generation first:
// its reason and message, False when it is Remediated; Ready=True removes
// Stalled. TestSuccess is removed when tests are off. It records the
// post-renderer and commonMetadata digests observed. Flux compatible
// (internal/reconcile/release.go summarize).
func summarize(obj *helmv2.HelmRelease) {
	order := []string{helmv2.RemediatedCondition, helmv2.ReleasedCondition}
	ts := action.TestSpec(obj)
	if ts.Enable && !ts.IgnoreFailures {
		order = []string{helmv2.RemediatedCondition, helmv2.TestSuccessCondition, helmv2.ReleasedCondition}
	}
	if !ts.Enable {
		reconciler.RemoveConditions(obj, helmv2.TestSuccessCondition)
	}
	var pick *metav1.Condition
	for _, typ := range order {
		c := apimeta.FindStatusCondition(obj.Status.Conditions, typ)
		if c == nil {
			continue
		}
		if pick == nil || c.ObservedGeneration > pick.ObservedGeneration {
			pick = c
		}
	}
	if pick == nil {
		return
	}
	status := pick.Status
	if pick.Type == helmv2.RemediatedCondition {
		status = metav1.ConditionFalse
	}
	if status == metav1.ConditionTrue {
		reconciler.RemoveConditions(obj, meta.StalledCondition)
	}
	reconciler.SetCondition(obj, meta.ReadyCondition, status, pick.Reason, pick.Message)
	// The digests the release was last acted on with (Flux does it here).
	obj.Status.ObservedPostRenderersDigest = postrender.PostRenderersDigest(obj)
	obj.Status.ObservedCommonMetadataDigest = postrender.CommonMetadataDigest(obj)
}

// replaceCondition turns condition target into replacement with the given
// reason and message (status True). Flux compatible.
func replaceCondition(obj *helmv2.HelmRelease, target, replacement, reason, msg string) {
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, target); c != nil {
		reconciler.RemoveConditions(obj, target, replacement)
		reconciler.SetCondition(obj, replacement, metav1.ConditionTrue, reason, msg)
	}
}

// eventMeta is the metadata of a release event: chart version, values
// digest, app version and the chart's OCI digest (OCI sources). Flux
// compatible keys.
func eventMeta(version, configDigest, appVersion, ociDigest string) map[string]string {
	m := map[string]string{}
	g := helmv2.GroupVersion.Group
	if version != "" {
		m[g+"/revision"] = version
	}
	if configDigest != "" {
		m[g+"/token"] = configDigest
	}
	if appVersion != "" {
		m[g+"/app-version"] = appVersion
	}
	if ociDigest != "" {
		m[g+"/oci-digest"] = ociDigest
	}
	return m
}

func (r *HelmReleaseReconciler) snapshotMeta(s *helmv2.Snapshot) map[string]string {
	if s == nil {
		return nil
	}
	return eventMeta(s.ChartVersion, s.ConfigDigest, s.AppVersion, s.OCIDigest)
}
