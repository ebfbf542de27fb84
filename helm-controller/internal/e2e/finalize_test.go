package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A HelmRelease whose uninstall keeps failing (its pre-delete hook cannot
// be created) is retried for its timeout after the deletion, then released
// with a Warning naming the release left in place, instead of holding its
// namespace in Terminating for ever.
func TestDeleteWithFailingUninstallReleasedAfterTimeout(t *testing.T) {
	logsOnFailure(t)
	ns := testenv.NewNamespace(t, env.Client, "uninstall-fails-")
	dir := helmtest.MinimalChart(t, "hooked", "0.1.0")
	hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-pre-delete\n  namespace: no-such-namespace\n" +
		"  annotations: {\"helm.sh/hook\": pre-delete}\ndata: {a: b}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "hook.yaml"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	charts := helmtest.NewChartServer(t)
	charts.Add(helmtest.PackageChart(t, dir))
	create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: charts.URL(), Interval: metav1.Duration{Duration: time.Hour}}})
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour}, Timeout: &metav1.Duration{Duration: 10 * time.Second},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "hooked", Version: "*",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}}}
	create(t, hr)
	waitReady(t, hr)

	start := time.Now()
	if err := env.Client.Delete(context.Background(), hr); err != nil {
		t.Fatal(err)
	}
	events := func() []string { return testenv.KubeEvents(t, env.Client, ns, hr.Name, helmv2.UninstallFailedReason) }
	failed := "Helm uninstall failed for release " + ns + "/app.v1 with chart hooked@0.1.0: "
	waitFor(t, hr, "an UninstallFailed event", func() bool {
		for _, msg := range events() {
			if strings.HasPrefix(msg, failed) {
				return true
			}
		}
		return false
	})
	testenv.WaitGone(t, env.Client, hr, "the HelmRelease released after its timeout")
	if took := time.Since(start); took < 8*time.Second {
		t.Errorf("released after %s, before the 10s timeout", took.Round(time.Second))
	}
	prefix := "Skipping uninstall: still failing 10s after the deletion: " + failed
	suffix := fmt.Sprintf("; Helm release '%s/app' left in place (storage namespace '%s')", ns, ns)
	var found bool
	for _, msg := range events() {
		found = found || strings.HasPrefix(msg, prefix) && strings.HasSuffix(msg, suffix)
	}
	if !found {
		t.Errorf("no event %q...%q in %q", prefix, suffix, events())
	}
	if rels := helmtest.Releases(t, env.KubeconfigPath, ns); len(rels) != 1 {
		t.Errorf("the release should be left in storage, found %s", describe(rels))
	}
}
