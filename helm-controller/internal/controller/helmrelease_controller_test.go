package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinary runs the scenarios against one helm-controller binary, each
// in its own namespace, in parallel.
func TestBinary(t *testing.T) {
	t.Parallel()
	testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector=!"+shardKey)...)
	t.Run("InstallUpgradeUninstall", testInstallUpgradeUninstall)
	t.Run("FailedUpgradeRollbackThenRetriesExceeded", testRollbackRetriesExceeded)
	t.Run("LongNameTargetAndStorageNamespace", testLongNameTargetStorage)
	t.Run("ChartTemplateDependsOn", testChartTemplateDependsOn)
	t.Run("FailedInstallRetriesExceeded", testFailedInstall)
	t.Run("ValuesFromPostRenderDriftCorrected", testValuesPostRenderDrift)
	t.Run("DriftWarnReportsOnly", testDriftWarn)
	t.Run("ValuesFromPrecedence", testValuesFromPrecedence)
	t.Run("UpgradeThatDoesNotRenderKeepsRelease", testUpgradeDoesNotRender)
	t.Run("NewGenerationCancelsWait", testNewGenerationCancelsWait)
	t.Run("RetryOnFailure", testRetryOnFailure)
	t.Run("OCIRepositoryChartRef", testOCIRepositoryChartRef)
	t.Run("ChartTemplateOCIRepository", testChartTemplateOCIRepository)
	t.Run("HealthCheckExprs", testHealthCheckExprs)
}

// testInstallUpgradeUninstall installs podinfo (Ready with Flux's message,
// a real Helm storage Secret, history, inventory, events), upgrades it on a
// values change and on a new chart version, and uninstalls it when the
// HelmRelease is deleted.
func testInstallUpgradeUninstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, srv, a := chartFixture(t)
	hr := newRelease(t, ns, "podinfo", "podinfo", nil)

	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, a.Revision))
	if c := cond(hr, helmv2.ReleasedCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != helmv2.InstallSucceededReason {
		t.Errorf("Released: %+v", c)
	}
	if len(hr.Status.History) != 1 {
		t.Fatalf("history: %+v", hr.Status.History)
	}
	snap := hr.Status.History[0]
	if snap.Name != "podinfo" || snap.Namespace != ns || snap.Version != 1 || snap.Status != "deployed" ||
		snap.ChartName != "podinfo" || snap.ChartVersion != a.Revision || snap.AppVersion == "" ||
		!strings.HasPrefix(snap.Digest, "sha256:") || !strings.HasPrefix(snap.ConfigDigest, "sha256:") || snap.Action != "install" {
		t.Errorf("snapshot: %+v", snap)
	}
	if hr.Status.StorageNamespace != ns || hr.Status.LastAttemptedRevision != a.Revision ||
		hr.Status.LastAttemptedReleaseAction != "install" || hr.Status.LastAttemptedConfigDigest != snap.ConfigDigest ||
		hr.Status.LastAttemptedGeneration != hr.Generation || hr.Status.LastAttemptedReleaseActionDuration == nil {
		t.Errorf("status: %+v", hr.Status)
	}
	if hr.Status.Inventory == nil || !slices.ContainsFunc(hr.Status.Inventory.Entries, func(e kustomizev1.ResourceRef) bool {
		return e.ID == ns+"_podinfo_apps_Deployment" && e.Version == "v1"
	}) {
		t.Errorf("inventory: %+v", hr.Status.Inventory)
	}
	secrets := releaseSecrets(t, ns, "podinfo")
	if len(secrets) != 1 || secrets[0].Name != "sh.helm.release.v1.podinfo.v1" || secrets[0].Labels["status"] != "deployed" ||
		secrets[0].Type != "helm.sh/release.v1" {
		t.Fatalf("Helm storage: %+v", secrets)
	}
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep); err != nil {
		t.Fatal(err)
	}
	if dep.Labels["app.kubernetes.io/managed-by"] != "Helm" || dep.Annotations["meta.helm.sh/release-name"] != "podinfo" {
		t.Errorf("Deployment metadata: %v %v", dep.Labels, dep.Annotations)
	}
	if ev := kubeEvents(t, ns, "podinfo", helmv2.InstallSucceededReason); len(ev) != 1 {
		t.Errorf("InstallSucceeded events: %q", ev)
	}
	// The events carry the chart version, values digest and app version.
	var evs corev1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason != helmv2.InstallSucceededReason {
			continue
		}
		want := map[string]string{"helm.toolkit.fluxcd.io/revision": a.Revision, "helm.toolkit.fluxcd.io/token": snap.ConfigDigest,
			"helm.toolkit.fluxcd.io/app-version": snap.AppVersion}
		for k, v := range want {
			if e.Annotations[k] != v {
				t.Errorf("event annotation %s=%q, want %q", k, e.Annotations[k], v)
			}
		}
	}

	// A values change upgrades.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"replicaCount":2}`) })
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/podinfo.v2 with chart podinfo@%s", ns, a.Revision))
	if len(hr.Status.History) != 2 || hr.Status.History[0].Version != 2 || hr.Status.History[1].Status != "superseded" ||
		hr.Status.History[0].ConfigDigest == snap.ConfigDigest || hr.Status.History[0].Action != "upgrade" {
		t.Errorf("history after the values change: %+v", hr.Status.History)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas: %v %v", err, dep.Spec.Replicas)
	}

	// A new chart version upgrades.
	a2 := podinfo(t, srv, "6.99.0")
	serveChart(t, ns, "podinfo", a2)
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/podinfo.v3 with chart podinfo@6.99.0", ns))
	if hr.Status.History[0].ChartVersion != "6.99.0" || hr.Status.LastAttemptedRevision != "6.99.0" {
		t.Errorf("history after the new chart: %+v", hr.Status.History)
	}
	if n := len(releaseSecrets(t, ns, "podinfo")); n != 3 {
		t.Errorf("%d Helm storage Secrets, want 3", n)
	}

	// Deleting the HelmRelease uninstalls the release.
	if err := env.Client.Delete(ctx, hr); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, hr, "HelmRelease deleted")
	if s := releaseSecrets(t, ns, "podinfo"); len(s) != 0 {
		t.Errorf("Helm storage left after uninstall: %d Secrets", len(s))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment after uninstall: %v", err)
	}
}

// testRollbackRetriesExceeded makes an upgrade fail (a Deployment that never
// becomes ready within a short timeout): it is rolled back
// (Remediated=True RollbackSucceeded), retried once, rolled back again and
// then stalled with RetriesExceeded.
func testRollbackRetriesExceeded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _, a := chartFixture(t)
	hr := newRelease(t, ns, "app", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		hr.Spec.Upgrade = &helmv2.Upgrade{Remediation: &helmv2.UpgradeRemediation{Retries: 1}}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/app.v1 with chart podinfo@%s", ns, a.Revision))

	// No node matches: the new pods stay Pending.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"nodeSelector":{"eddy.test/none":"x"}}`) })
	waitFor(t, hr, "Stalled RetriesExceeded", func() bool {
		c := cond(hr, meta.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == helmv2.RetriesExceededReason &&
			hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
	if c := cond(hr, meta.StalledCondition); c.Message != "Failed to upgrade after 2 attempt(s)" {
		t.Errorf("Stalled message %q", c.Message)
	}
	if c := cond(hr, helmv2.RemediatedCondition); c == nil || c.Status != metav1.ConditionTrue || c.Reason != helmv2.RollbackSucceededReason ||
		!strings.HasPrefix(c.Message, "Helm rollback to previous release "+ns+"/app.v") || !strings.HasSuffix(c.Message, "succeeded") {
		t.Errorf("Remediated: %+v", c)
	}
	if c := cond(hr, meta.ReadyCondition); c.Status != metav1.ConditionFalse || c.Reason != helmv2.RollbackSucceededReason {
		t.Errorf("Ready: %+v", c)
	}
	if c := cond(hr, helmv2.ReleasedCondition); c == nil || c.Reason != helmv2.UpgradeFailedReason ||
		!strings.HasPrefix(c.Message, fmt.Sprintf("Helm upgrade failed for release %s/app with chart podinfo@%s: ", ns, a.Revision)) {
		t.Errorf("Released: %+v", c)
	}
	if hr.Status.UpgradeFailures != 2 || hr.Status.Failures < 2 {
		t.Errorf("failures %d, upgradeFailures %d", hr.Status.Failures, hr.Status.UpgradeFailures)
	}
	if ev := kubeEvents(t, ns, "app", helmv2.RollbackSucceededReason); len(ev) != 2 {
		t.Errorf("RollbackSucceeded events: %q", ev)
	}
	if ev := kubeEvents(t, ns, "app", helmv2.UpgradeFailedReason); len(ev) != 2 || !strings.Contains(ev[0], "timeout waiting for") {
		t.Errorf("UpgradeFailed events: %q", ev)
	}
	// The release is back at the installed values, deployed.
	latest := hr.Status.History[0]
	if latest.Status != "deployed" || latest.Action != "rollback" {
		t.Errorf("latest snapshot: %+v", latest)
	}
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-podinfo"}, dep); err != nil || len(dep.Spec.Template.Spec.NodeSelector) != 0 {
		t.Errorf("Deployment after rollback: %v %v", err, dep.Spec.Template.Spec.NodeSelector)
	}
	// A spec change resets the counters and the release recovers.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"replicaCount":1}`) })
	waitFor(t, hr, "Ready=True after a fix", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
	if cond(hr, meta.StalledCondition) != nil || cond(hr, helmv2.RemediatedCondition) != nil || hr.Status.UpgradeFailures != 0 {
		t.Errorf("after the fix: %+v", hr.Status)
	}
}

// testLongNameTargetStorage installs a release whose default name
// `<targetNamespace>-<name>` is over 53 characters into another namespace,
// with Helm storage in a third.
func testLongNameTargetStorage(t *testing.T) {
	t.Parallel()
	ns, target, storage := newNamespace(t), newNamespace(t), newNamespace(t)
	srv := helmtest.NewChartServer(t)
	a := podinfo(t, srv, "")
	newHelmChart(t, ns, "podinfo")
	serveChart(t, ns, "podinfo", a)
	name := "a-helm-release-with-a-rather-long-name-for-eddy"
	hr := newRelease(t, ns, name, "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.TargetNamespace, hr.Spec.StorageNamespace = target, storage
	})
	full := target + "-" + name
	short := full[:40] + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(full)))[:12]
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/%s.v1 with chart podinfo@%s", target, short, a.Revision))
	if s := hr.Status.History[0]; s.Name != short || s.Namespace != target || len(short) != 53 {
		t.Errorf("snapshot %+v, want release %s", s, short)
	}
	if hr.Status.StorageNamespace != storage {
		t.Errorf("storageNamespace %q", hr.Status.StorageNamespace)
	}
	if s := releaseSecrets(t, storage, short); len(s) != 1 || s[0].Name != "sh.helm.release.v1."+short+".v1" {
		t.Errorf("Helm storage in %s: %+v", storage, s)
	}
	var deps appsv1.DeploymentList
	if err := env.Client.List(context.Background(), &deps, client.InNamespace(target)); err != nil || len(deps.Items) != 1 {
		t.Errorf("Deployments in the target namespace: %v %d", err, len(deps.Items))
	}
	if hr.Status.Inventory == nil || !strings.HasPrefix(hr.Status.Inventory.Entries[0].ID, target+"_") {
		t.Errorf("inventory: %+v", hr.Status.Inventory)
	}
}

// testChartTemplateDependsOn: a HelmRelease with spec.chart gets its
// generated HelmChart, waits for it (SourceNotReady), and one depending
// on it waits (DependencyNotReady) until it is Ready. Switching the first to
// chartRef deletes the generated HelmChart.
func testChartTemplateDependsOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	a := podinfo(t, srv, "")
	first := newRelease(t, ns, "first", "", func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo",
			SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"}}}
	})
	newHelmChart(t, ns, "shared")
	serveChart(t, ns, "shared", a)
	second := newRelease(t, ns, "second", "shared", func(hr *helmv2.HelmRelease) {
		hr.Spec.DependsOn = []meta.DependencyReference{{Name: "first"}}
	})
	generated := ns + "-first"
	waitFor(t, first, "SourceNotReady", func() bool {
		c := cond(first, meta.ReadyCondition)
		return c != nil && c.Reason == helmv2.SourceNotReadyReason && first.Status.HelmChart == ns+"/"+generated
	})
	if c := cond(first, meta.ReadyCondition); c.Message != fmt.Sprintf("HelmChart '%s/%s' is not ready: latest generation of object has not been reconciled", ns, generated) {
		t.Errorf("SourceNotReady message %q", c.Message)
	}
	testenv.CheckStatus(t, first)
	hc := &sourcev1.HelmChart{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: generated}, hc); err != nil {
		t.Fatal(err)
	}
	if hc.Labels[NameLabel] != "first" || hc.Labels[NamespaceLabel] != ns || hc.Spec.Chart != "podinfo" || hc.Spec.Version != "*" ||
		hc.Spec.Interval.Duration != time.Hour || hc.Spec.ReconcileStrategy != "ChartVersion" {
		t.Errorf("generated HelmChart: %+v %+v", hc.Labels, hc.Spec)
	}
	waitFor(t, second, "DependencyNotReady", func() bool {
		c := cond(second, meta.ReadyCondition)
		return c != nil && c.Reason == helmv2.DependencyNotReadyReason && c.Message == fmt.Sprintf("dependency '%s/first' is not ready", ns)
	})
	testenv.CheckStatus(t, second)
	if second.Status.ObservedGeneration == second.Generation {
		t.Error("observedGeneration written while waiting for a dependency")
	}

	serveChart(t, ns, generated, a)
	waitReady(t, first, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/first.v1 with chart podinfo@%s", ns, a.Revision))
	waitReady(t, second, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/second.v1 with chart podinfo@%s", ns, a.Revision))

	// Template → chartRef: the generated HelmChart goes.
	patchSpec(t, first, func(hr *helmv2.HelmRelease) {
		hr.Spec.Chart = nil
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "shared"}
	})
	testenv.WaitGone(t, env.Client, hc, "generated HelmChart deleted")
	waitReady(t, first, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/first.v1 with chart podinfo@%s", ns, a.Revision))
	if first.Status.HelmChart != "" {
		t.Errorf("status.helmChart %q after switching to chartRef", first.Status.HelmChart)
	}
}

// testFailedInstall: an install that times out counts an install failure;
// with no retries the release is not remediated by default
// (remediateLastFailure false) and the HelmRelease stalls.
func testFailedInstall(t *testing.T) {
	t.Parallel()
	ns, _, a := chartFixture(t)
	hr := newRelease(t, ns, "broken", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		hr.Spec.Values = jsonValues(`{"nodeSelector":{"eddy.test/none":"x"}}`)
	})
	waitFor(t, hr, "Stalled RetriesExceeded", func() bool {
		c := cond(hr, meta.StalledCondition)
		return c != nil && c.Reason == helmv2.RetriesExceededReason && hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
	if c := cond(hr, meta.StalledCondition); c.Message != "Failed to install after 1 attempt(s)" {
		t.Errorf("Stalled message %q", c.Message)
	}
	ready := cond(hr, meta.ReadyCondition)
	prefix := fmt.Sprintf("Helm install failed for release %s/broken with chart podinfo@%s: ", ns, a.Revision)
	if ready.Status != metav1.ConditionFalse || ready.Reason != helmv2.InstallFailedReason || !strings.HasPrefix(ready.Message, prefix) ||
		!strings.Contains(ready.Message, "timeout waiting for: [Deployment/"+ns+"/broken-podinfo status: 'InProgress']: "+
			"Deployment/"+ns+"/broken-podinfo: not scheduled: Unschedulable (0/") {
		// Beyond Flux: the pod's reason follows Flux's message.
		t.Errorf("Ready %+v", ready)
	}
	if hr.Status.InstallFailures != 1 || hr.Status.LastAttemptedReleaseAction != "install" || len(hr.Status.History) != 1 ||
		hr.Status.History[0].Status != "failed" {
		t.Errorf("status %+v", hr.Status)
	}
	if s := releaseSecrets(t, ns, "broken"); len(s) != 1 || s[0].Labels["status"] != "failed" {
		t.Errorf("Helm storage: %+v", s)
	}
}

// testValuesPostRenderDrift installs with values from a ConfigMap and
// commonMetadata (post-renderer), then scales the Deployment by hand: the
// next reconcile reports the drift (DriftDetected) and corrects it
// (DriftCorrected), Drifted=False after.
func testValuesPostRenderDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _, a := chartFixture(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		Data: map[string]string{"values.yaml": "replicaCount: 2\n"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	hr := newRelease(t, ns, "drift", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.ValuesFrom = []meta.ValuesReference{{Kind: "ConfigMap", Name: "values"}}
		hr.Spec.CommonMetadata = &helmv2.CommonMetadata{Labels: map[string]string{"team": "payments"}}
		hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/drift.v1 with chart podinfo@%s", ns, a.Revision))
	if c := cond(hr, helmv2.DriftedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != helmv2.NoDriftDetectedReason {
		t.Errorf("Drifted: %+v", c)
	}
	if hr.Status.ObservedCommonMetadataDigest == "" {
		t.Error("no observedCommonMetadataDigest")
	}
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drift-podinfo"}, dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 2 || dep.Labels["team"] != "payments" || dep.Labels[NameLabel] != "drift" || dep.Labels[NamespaceLabel] != ns {
		t.Errorf("Deployment: replicas %d, labels %v", *dep.Spec.Replicas, dep.Labels)
	}

	base := dep.DeepCopy()
	dep.Spec.Replicas = ptr(int32(3))
	if err := env.Client.Patch(ctx, dep, client.MergeFrom(base), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testenv.RequestReconcile(t, env.Client, hr, func() string { return hr.Status.LastHandledReconcileAt })
	detected := kubeEvents(t, ns, "drift", helmv2.DriftDetectedReason)
	prefix := fmt.Sprintf("Cluster state of release %s/drift.v1 has drifted from the desired state:\nDeployment/%s/drift-podinfo changed", ns, ns)
	if len(detected) != 1 || !strings.HasPrefix(detected[0], prefix) {
		t.Errorf("DriftDetected events %q, want one starting %q", detected, prefix)
	}
	corrected := kubeEvents(t, ns, "drift", "DriftCorrected")
	want := fmt.Sprintf("Cluster state of release %s/drift.v1 has been corrected:\nDeployment/%s/drift-podinfo configured", ns, ns)
	if len(corrected) != 1 || corrected[0] != want {
		t.Errorf("DriftCorrected events %q, want %q", corrected, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas after the correction: %v %d", err, *dep.Spec.Replicas)
	}
	if c := cond(hr, helmv2.DriftedCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Drifted after the correction: %+v", c)
	}
	testenv.CheckStatus(t, hr)
}

// testDriftWarn: with driftDetection mode warn a Deployment scaled by hand
// is reported (Drifted=True DriftDetected, a Warning event naming the
// field) and left as it is: no correction, no upgrade, the release still
// Ready at v1.
func testDriftWarn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _, a := chartFixture(t)
	hr := newRelease(t, ns, "warn", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/warn.v1 with chart podinfo@%s", ns, a.Revision))
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "warn-podinfo"}, dep); err != nil {
		t.Fatal(err)
	}
	base := dep.DeepCopy()
	dep.Spec.Replicas = ptr(int32(3))
	if err := env.Client.Patch(ctx, dep, client.MergeFrom(base), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testenv.RequestReconcile(t, env.Client, hr, func() string { return hr.Status.LastHandledReconcileAt })
	testenv.WaitFor(t, env.Client, hr, "Drifted=True", func() bool {
		c := cond(hr, helmv2.DriftedCondition)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	drifted := cond(hr, helmv2.DriftedCondition)
	prefix := fmt.Sprintf("Cluster state of release %s/warn.v1 has drifted from the desired state:\nDeployment/%s/warn-podinfo changed", ns, ns)
	if drifted.Reason != helmv2.DriftDetectedReason || !strings.HasPrefix(drifted.Message, prefix) || !strings.Contains(drifted.Message, ".spec.replicas") {
		t.Errorf("Drifted %s %q, want %s starting %q naming .spec.replicas", drifted.Reason, drifted.Message, helmv2.DriftDetectedReason, prefix)
	}
	if r := cond(hr, meta.ReadyCondition); r == nil || r.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v, want True: warn only reports", r)
	}
	var detected []string
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, testenv.WaitTimeout, true, func(context.Context) (bool, error) {
		detected = kubeEvents(t, ns, "warn", helmv2.DriftDetectedReason)
		return len(detected) > 0, nil
	}); err != nil || !strings.HasPrefix(detected[0], prefix) {
		t.Errorf("DriftDetected events %q, want one starting %q", detected, prefix)
	}
	// The status above was written after any correction would have been made.
	if corrected := kubeEvents(t, ns, "warn", "DriftCorrected"); len(corrected) != 0 {
		t.Errorf("DriftCorrected events %q in warn mode", corrected)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil || *dep.Spec.Replicas != 3 {
		t.Errorf("replicas after a warn reconcile: %v %d, want 3 (left as edited)", err, *dep.Spec.Replicas)
	}
	if len(hr.Status.History) != 1 {
		t.Errorf("history %d snapshots, want 1: warn mode does not upgrade", len(hr.Status.History))
	}
}

// testRetryOnFailure: with the RetryOnFailure strategy a failed install is
// not remediated nor stalled; the release is retried (by upgrade) every
// retryInterval, Reconciling=True ProgressingWithRetry "retrying after <d>".
func testRetryOnFailure(t *testing.T) {
	t.Parallel()
	ns, _, _ := chartFixture(t)
	hr := newRelease(t, ns, "retry", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		hr.Spec.Values = jsonValues(`{"nodeSelector":{"eddy.test/none":"x"}}`)
		hr.Spec.Install = &helmv2.Install{Strategy: &helmv2.InstallStrategy{Name: helmv2.ActionStrategyRetryOnFailure,
			RetryInterval: &metav1.Duration{Duration: time.Second}}}
		hr.Spec.Upgrade = &helmv2.Upgrade{Strategy: &helmv2.UpgradeStrategy{Name: helmv2.ActionStrategyRetryOnFailure,
			RetryInterval: &metav1.Duration{Duration: time.Second}}}
	})
	waitFor(t, hr, "an upgrade retried after the failed install", func() bool {
		c := cond(hr, meta.ReconcilingCondition)
		return c != nil && c.Reason == meta.ProgressingWithRetryReason && c.Message == "retrying after 1s" &&
			hr.Status.UpgradeFailures >= 1 && hr.Status.InstallFailures == 1
	})
	testenv.CheckStatus(t, hr)
	if c := cond(hr, meta.StalledCondition); c != nil {
		t.Errorf("stalled: %+v", c)
	}
	if c := cond(hr, helmv2.RemediatedCondition); c != nil {
		t.Errorf("remediated: %+v", c)
	}
	if c := cond(hr, meta.ReadyCondition); c.Status != metav1.ConditionFalse || c.Reason != helmv2.UpgradeFailedReason {
		t.Errorf("Ready: %+v", c)
	}
	// Fixed values: the next retry succeeds.
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = nil })
	waitFor(t, hr, "Ready=True", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == helmv2.UpgradeSucceededReason &&
			hr.Status.ObservedGeneration == hr.Generation
	})
	testenv.CheckStatus(t, hr)
}

// patchSpec changes hr's spec with a merge patch.
func patchSpec(t testing.TB, hr *helmv2.HelmRelease, mutate func(*helmv2.HelmRelease)) {
	t.Helper()
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(hr), hr); err != nil {
		t.Fatal(err)
	}
	base := hr.DeepCopy()
	mutate(hr)
	if err := env.Client.Patch(context.Background(), hr, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}
