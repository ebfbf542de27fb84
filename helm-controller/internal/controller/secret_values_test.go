package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartDirFixture is a test namespace with a HelmChart name Ready with the
// chart directory dir, packaged and served by the test's chart server.
func chartDirFixture(t *testing.T, name, dir string) string {
	t.Helper()
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	tgz := helmtest.PackageChart(t, dir)
	srv.Add(tgz)
	newHelmChart(t, ns, name)
	serveChart(t, ns, name, artifactOf(t, srv, tgz))
	return ns
}

// TestSecretValueNotInStatusEventsOrLogs: a value read from a Secret
// (valuesFrom) that the chart's values schema refuses fails the install;
// the schema validator quotes the offending value, and that value must
// appear neither in the HelmRelease's status, nor in its events, nor in
// the controller's log.
func TestSecretValueNotInStatusEventsOrLogs(t *testing.T) {
	t.Parallel()
	const shard, secret = "secret-values", "Sup3r-S3cret-Pa55"
	p := testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard)...)

	dir := helmtest.MinimalChart(t, "guarded", "0.1.0")
	schema := `{"type":"object","properties":{"greeting":{"type":"string","pattern":"^[a-z]+$"}}}`
	if err := os.WriteFile(filepath.Join(dir, "values.schema.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := chartDirFixture(t, "guarded", dir)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"greeting": []byte(secret)}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	hr := newRelease(t, ns, "app", "guarded", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: shard}
		hr.Spec.ValuesFrom = []meta.ValuesReference{{Kind: "Secret", Name: "creds", ValuesKey: "greeting", TargetPath: "greeting"}}
	})
	waitFor(t, hr, "Ready=False InstallFailed", func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == helmv2.InstallFailedReason
	})
	if c := cond(hr, meta.ReadyCondition); !strings.Contains(c.Message, "at '/greeting': '***' does not match pattern '^[a-z]+$'") {
		t.Errorf("Ready message %q, want Helm's schema error with the value masked", c.Message)
	}
	for _, c := range hr.Status.Conditions {
		if strings.Contains(c.Message, secret) {
			t.Errorf("condition %s carries the Secret's value: %q", c.Type, c.Message)
		}
	}
	for _, ev := range kubeEvents(t, ns, "app", helmv2.InstallFailedReason) {
		if strings.Contains(ev, secret) {
			t.Errorf("event carries the Secret's value: %q", ev)
		}
	}
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("controller log carries the Secret's value")
	}
}

// TestSecretValueNotInDriftReport: a value read from a Secret that the
// chart renders into a ConfigMap is edited in the cluster; the drift
// report quotes the release's value of the field, which must not appear in
// the Drifted condition or the DriftDetected event.
func TestSecretValueNotInDriftReport(t *testing.T) {
	t.Parallel()
	const shard, secret = "secret-drift", "Dr1ft-S3cret-Pa55"
	ctx := context.Background()
	p := testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard)...)
	ns := chartDirFixture(t, "minimal", helmtest.MinimalChart(t, "minimal", "0.1.0"))
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Data: map[string][]byte{"values.yaml": []byte("greeting: " + secret + "\n")}}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	hr := newRelease(t, ns, "app", "minimal", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: shard}
		hr.Spec.ValuesFrom = []meta.ValuesReference{{Kind: "Secret", Name: "creds"}}
		hr.Spec.DriftDetection = &helmv2.DriftDetection{Mode: helmv2.DriftDetectionWarn}
	})
	waitReady(t, hr, helmv2.InstallSucceededReason, fmt.Sprintf("Helm install succeeded for release %s/app.v1 with chart minimal@0.1.0", ns))
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
		t.Fatal(err)
	}
	base := cm.DeepCopy()
	cm.Data["greeting"] = "edited"
	if err := env.Client.Patch(ctx, cm, client.MergeFrom(base), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testenv.RequestReconcile(t, env.Client, hr, func() string { return hr.Status.LastHandledReconcileAt })
	waitFor(t, hr, "Drifted=True", func() bool {
		c := cond(hr, helmv2.DriftedCondition)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	c := cond(hr, helmv2.DriftedCondition)
	if !strings.Contains(c.Message, "ConfigMap/"+ns+"/app changed") {
		t.Errorf("Drifted message %q", c.Message)
	}
	if strings.Contains(c.Message, secret) {
		t.Errorf("Drifted condition carries the Secret's value: %q", c.Message)
	}
	for _, ev := range kubeEvents(t, ns, "app", helmv2.DriftDetectedReason) {
		if strings.Contains(ev, secret) {
			t.Errorf("DriftDetected event carries the Secret's value: %q", ev)
		}
	}
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("controller log carries the Secret's value")
	}
}
