package controller

import (
	"context"
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
)

// TestSecretValueNotInStatusEventsOrLogs: a value read from a Secret
// (valuesFrom) that the chart's values schema refuses fails the install;
// the schema validator quotes the offending value, and that value must
// appear neither in the HelmRelease's status, nor in its events, nor in
// the controller's log (issue #12: secrets in values never appear in
// events, logs or status).
func TestSecretValueNotInStatusEventsOrLogs(t *testing.T) {
	t.Parallel()
	const shard, secret = "secret-values", "Sup3r-S3cret-Pa55"
	p := testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard)...)

	dir := helmtest.MinimalChart(t, "guarded", "0.1.0")
	schema := `{"type":"object","properties":{"greeting":{"type":"string","pattern":"^[a-z]+$"}}}`
	if err := os.WriteFile(filepath.Join(dir, "values.schema.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	tgz := helmtest.PackageChart(t, dir)
	srv.Add(tgz)
	newHelmChart(t, ns, "guarded")
	serveChart(t, ns, "guarded", artifactOf(t, srv, tgz))
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
