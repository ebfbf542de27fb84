package e2e

import (
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHelmControllerKilled kills helm-controller (SIGKILL) with a release
// installed. While it is down the other controllers go on: source-controller
// picks up a new chart version from the HelmRepository into the HelmChart,
// kustomize-controller applies a new commit. Restarted, as a kubelet would,
// helm-controller upgrades the release to the new chart version.
// (A kill in the middle of an upgrade, which leaves the release
// pending-upgrade for the restarted controller to unlock, is
// helm-controller's TestKilledMidUpgradeUnlocked.)
func TestHelmControllerKilled(t *testing.T) {
	logsOnFailure(t)
	ns, charts, hr := releasedApp(t, "killed-")

	repo := gitSrv.NewRepo(t, map[string]string{"cm.yaml": configMap(ns, "one")})
	create(t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: repo.URL(), Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}})
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "config"}}}
	create(t, ks)
	waitFor(t, ks, "applied", func() bool { return ks.Status.LastAppliedRevision != "" })

	ctrls.Proc("helm-controller").Kill()
	t.Cleanup(func() {
		if t.Failed() {
			restart(t, "helm-controller") // for the tests after this one
		}
	})

	// source-controller: a new chart version reaches the HelmChart.
	charts.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "app", "0.2.0")))
	src := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns}}
	testenv.RequestReconcile(t, env.Client, src, func() string { return src.Status.LastHandledReconcileAt })
	chart := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Name: ns + "-app", Namespace: ns}}
	waitFor(t, chart, "the HelmChart at 0.2.0", func() bool {
		return chart.Status.Artifact != nil && chart.Status.Artifact.Revision == "0.2.0"
	})
	// kustomize-controller: a new commit is applied.
	rev := "main@sha1:" + repo.MustCommit(t, map[string]string{"cm.yaml": configMap(ns, "two")}, "two")
	git := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns}}
	testenv.RequestReconcile(t, env.Client, git, func() string { return git.Status.LastHandledReconcileAt })
	waitFor(t, ks, "applied "+rev, func() bool { return ks.Status.LastAppliedRevision == rev })
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "config"}, cm); err != nil || cm.Data["value"] != "two" {
		t.Fatalf("ConfigMap config: %v %v, want value two", err, cm.Data)
	}
	// Nothing upgraded the release meanwhile.
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(hr), hr); err != nil {
		t.Fatal(err)
	}
	if len(hr.Status.History) != 1 || hr.Status.History[0].ChartVersion != "0.1.0" {
		t.Fatalf("history %+v while helm-controller is down, want only v1 at 0.1.0", hr.Status.History)
	}

	restart(t, "helm-controller")
	waitFor(t, hr, "upgraded to chart 0.2.0", func() bool {
		return len(hr.Status.History) > 0 && hr.Status.History[0].ChartVersion == "0.2.0" && hr.Status.History[0].Status == "deployed"
	})
	waitReady(t, hr)
	want := fmt.Sprintf("Helm upgrade succeeded for release %s/app.v2 with chart app@0.2.0", ns)
	if c := readyCondition(hr); c.Message != want {
		t.Errorf("Ready %q, want %q", c.Message, want)
	}
}

func configMap(ns, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: %s\ndata:\n  value: %s\n", ns, value)
}
