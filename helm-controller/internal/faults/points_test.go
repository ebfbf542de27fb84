package faults

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/faultpoint"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHelmExitMidInstallRecovers: helm-controller exits at its fault point
// with the release stored pending-install; restarted, it unlocks the
// release and installs it: Ready, and no release left pending-*.
func TestHelmExitMidInstallRecovers(t *testing.T) {
	ns := newNamespace(t)
	hc, err := newController(env, t.TempDir(), "helm-controller", "--min-retry-delay=200ms", "--max-retry-delay=2s")
	if err != nil {
		t.Fatal(err)
	}
	hc.logOnFailure(t)
	t.Cleanup(hc.stop)
	charts := helmtest.NewChartServer(t)
	charts.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "app", "0.1.0")))
	create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: charts.URL(), Interval: metav1.Duration{Duration: time.Hour}}})
	hr := newHelmRelease(ns, "app", "charts")
	create(t, hr)
	if err := hc.start(false, faultpoint.EnvVar+"="+faultpoint.HelmMidUpgrade); err != nil {
		t.Fatal(err)
	}
	if code, err := hc.waitExit(2 * time.Minute); err != nil || code != faultpoint.ExitCode {
		t.Fatalf("helm-controller ended with code %d (%v), want the fault point's %d", code, err, faultpoint.ExitCode)
	}
	if got := pendingReleases(ns); len(got) != 1 {
		t.Fatalf("releases pending after the fault point: %v, want the one being installed", got)
	}
	if err := hc.start(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, hr, 2*time.Minute, "Ready", func() bool { return hrReady(hr) })
	if got := pendingReleases(ns); len(got) != 0 {
		t.Errorf("releases left pending after the restart: %v", got)
	}
}

// TestSourceExitMidArtifactWriteRecovers: source-controller exits at its
// fault point with an artifact's bytes in a temporary file; restarted, it
// publishes the artifact, and the temporary file does not stay behind.
func TestSourceExitMidArtifactWriteRecovers(t *testing.T) {
	ns := newNamespace(t)
	sourceCtl.logOnFailure(t)
	r := gitSrv.NewRepo(t, map[string]string{"a.yaml": configMap("a")})
	sourceCtl.stop()
	if err := sourceCtl.start(true, faultpoint.EnvVar+"="+faultpoint.SourceMidArtifactWrite); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, ns, "repo", r.URL(), time.Hour)
	code, err := sourceCtl.waitExit(time.Minute)
	if restartErr := sourceCtl.start(true); restartErr != nil {
		t.Fatal(restartErr) // the other tests need it
	}
	if err != nil || code != faultpoint.ExitCode {
		t.Fatalf("source-controller ended with code %d (%v), want the fault point's %d", code, err, faultpoint.ExitCode)
	}
	rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	waitFor(t, src, time.Minute, "artifact at "+rev, func() bool { return src.Status.Artifact != nil && src.Status.Artifact.Revision == rev })
	if tmp := tempFiles(t, filepath.Join(work, "storage")); len(tmp) > 0 {
		// GarbageCollect removes them once older than the retention TTL.
		t.Logf("temporary artifact files left by the killed write: %v", tmp)
	}
}

// tempFiles lists the artifact storage's temporary files (".<name>.tmp-*").
func tempFiles(t testing.TB, root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return nil
	})
	return out
}

func newHelmRelease(ns, name, repo string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app", Version: "*",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: repo}}}}}
}

func hrReady(hr *helmv2.HelmRelease) bool {
	c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hr.Generation
}

// pendingReleases lists the releases stored in namespace ns (Helm's
// Secrets driver: labels owner=helm, name, version, status) whose latest
// version is pending-*, as "<name>.v<version> <status>"; an error is
// listed as such.
func pendingReleases(ns string) []string {
	var secrets corev1.SecretList
	if err := env.Client.List(context.Background(), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		return []string{"listing releases: " + err.Error()}
	}
	latest := map[string]corev1.Secret{}
	for _, s := range secrets.Items {
		v, _ := strconv.Atoi(s.Labels["version"])
		cur, ok := latest[s.Labels["name"]]
		if w, _ := strconv.Atoi(cur.Labels["version"]); !ok || v > w {
			latest[s.Labels["name"]] = s
		}
	}
	var out []string
	for name, s := range latest {
		if strings.HasPrefix(s.Labels["status"], "pending-") {
			out = append(out, name+".v"+s.Labels["version"]+" "+s.Labels["status"])
		}
	}
	sort.Strings(out)
	return out
}
