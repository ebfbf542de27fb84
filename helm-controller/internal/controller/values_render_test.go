package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testValuesFromPrecedence: a ConfigMap's values, then a Secret's value at
// a targetPath, then spec.values on top (Flux compatible): the release
// Helm stores carries exactly that merge.
func testValuesFromPrecedence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := chartDirFixture(t, "minimal", helmtest.MinimalChart(t, "minimal", "0.1.0"))
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"},
			Data: map[string]string{"values.yaml": "greeting: from-configmap\nsize: small\ncolour: red\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "override"},
			Data: map[string][]byte{"size": []byte("large")}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	hr := newRelease(t, ns, "app", "minimal", func(hr *helmv2.HelmRelease) {
		hr.Spec.ValuesFrom = []meta.ValuesReference{
			{Kind: "ConfigMap", Name: "base"},
			{Kind: "Secret", Name: "override", ValuesKey: "size", TargetPath: "size"},
			{Kind: "Secret", Name: "override", ValuesKey: "colour", TargetPath: "colour", Optional: true},
		}
		hr.Spec.Values = jsonValues(`{"greeting":"from-spec"}`)
	})
	waitReady(t, hr, helmv2.InstallSucceededReason, fmt.Sprintf("Helm install succeeded for release %s/app.v1 with chart minimal@0.1.0", ns))
	rels := helmtest.Releases(t, env.KubeconfigPath, ns)
	if len(rels) != 1 {
		t.Fatalf("%d releases, want 1", len(rels))
	}
	got, _ := json.Marshal(rels[0].Config)
	if want := `{"colour":"red","greeting":"from-spec","size":"large"}`; string(got) != want {
		t.Errorf("release values %s, want %s", got, want)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil || cm.Data["greeting"] != "from-spec" {
		t.Errorf("ConfigMap app: %v %v, want greeting from-spec", err, cm.Data)
	}
}

// testUpgradeDoesNotRender: an upgrade whose chart does not render (a
// template `fail`) is Ready=False UpgradeFailed with Helm's error, and the
// previous release stays deployed and serving: its objects untouched, no
// new release version stored.
func testUpgradeDoesNotRender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := helmtest.MinimalChart(t, "guarded", "0.1.0")
	tpl := "{{ if .Values.broken }}{{ fail \"refusing to render: broken is set\" }}{{ end }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "guard.yaml"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := chartDirFixture(t, "guarded", dir)
	hr := newRelease(t, ns, "app", "guarded", nil)
	waitReady(t, hr, helmv2.InstallSucceededReason, fmt.Sprintf("Helm install succeeded for release %s/app.v1 with chart guarded@0.1.0", ns))

	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"broken":true,"greeting":"changed"}`) })
	waitFor(t, hr, "Ready=False UpgradeFailed", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == helmv2.UpgradeFailedReason
	})
	want := fmt.Sprintf("Helm upgrade failed for release %s/app with chart guarded@0.1.0: ", ns)
	if c := cond(hr, meta.ReadyCondition); !strings.HasPrefix(c.Message, want) || !strings.Contains(c.Message, "refusing to render: broken is set") {
		t.Errorf("Ready message %q, want %q… with Helm's error", c.Message, want)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil || cm.Data["greeting"] != "hello" {
		t.Errorf("the previous release's ConfigMap: %v %v, want greeting hello", err, cm.Data)
	}
	secrets := releaseSecrets(t, ns, "app")
	if !slices.ContainsFunc(secrets, func(s corev1.Secret) bool {
		return s.Name == "sh.helm.release.v1.app.v1" && s.Labels["status"] == "deployed"
	}) {
		t.Errorf("release v1 is not deployed any more: %v", secretStatuses(secrets))
	}
}

func secretStatuses(secrets []corev1.Secret) []string {
	var out []string
	for _, s := range secrets {
		out = append(out, s.Name+" "+s.Labels["status"])
	}
	return out
}

// testNewGenerationCancelsWait: an upgrade waiting (timeout 5m) for a
// Deployment no node can run is cut short by a new generation:
// HealthCheckCanceled "New reconciliation triggered by HelmRelease/<ns>/<name>",
// not counted as a failure, and the new generation is released at once
// rather than after the timeout. Flux's CancelHealthCheckOnNewRevision, on
// in Eddy.
func testNewGenerationCancelsWait(t *testing.T) {
	t.Parallel()
	ns, _, a := chartFixture(t)
	hr := newRelease(t, ns, "waiting", "podinfo", func(hr *helmv2.HelmRelease) {
		hr.Spec.Timeout = &metav1.Duration{Duration: 5 * time.Minute}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/waiting.v1 with chart podinfo@%s", ns, a.Revision))
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"nodeSelector":{"type":"none"}}`) })
	waitFor(t, hr, "the upgrade waiting for its Deployment", func() bool {
		c := cond(hr, meta.ReconcilingCondition)
		return c != nil && strings.HasPrefix(c.Message, "Running 'upgrade' action")
	})
	// The key the waiting release added stays unless overwritten (Helm v3's
	// three-way merge from the last deployed release).
	patchSpec(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.Values = jsonValues(`{"nodeSelector":{"type":"kwok"}}`) })
	waitReady(t, hr, helmv2.UpgradeSucceededReason,
		fmt.Sprintf("Helm upgrade succeeded for release %s/waiting.v3 with chart podinfo@%s", ns, a.Revision))
	want := fmt.Sprintf("New reconciliation triggered by HelmRelease/%s/waiting", ns)
	if ev := kubeEvents(t, ns, "waiting", meta.HealthCheckCanceledReason); !slices.Contains(ev, want) {
		t.Errorf("HealthCheckCanceled events %q, want %q", ev, want)
	}
	if hr.Status.UpgradeFailures != 0 || hr.Status.Failures != 0 {
		t.Errorf("failures %d, upgradeFailures %d: a canceled wait is no failure", hr.Status.Failures, hr.Status.UpgradeFailures)
	}
}
