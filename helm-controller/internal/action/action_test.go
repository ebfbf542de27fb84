package action

import (
	"context"
	"errors"
	"io"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fixture is a Helm configuration over Helm's in-memory storage and a
// Kubernetes client that applies nothing (kube), with the releases written
// observed as the reconciler observes them.
type fixture struct {
	cfg      *helmaction.Configuration
	kube     *kubefake.FailingKubeClient
	observed []*release.Observed
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{kube: &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}}
	mem := driver.NewMemory()
	mem.SetNamespace("apps")
	f.cfg = &helmaction.Configuration{
		Releases:     storage.Init(&release.Observer{Driver: mem, Observe: release.ObserveInto(&f.observed, "")}),
		KubeClient:   f.kube,
		Capabilities: chartutil.DefaultCapabilities,
		Log:          t.Logf,
	}
	return f
}

// status is the status of version of release name in storage.
func (f *fixture) status(t *testing.T, name string, version int) helmrelease.Status {
	t.Helper()
	rls, err := f.cfg.Releases.Get(name, version)
	if err != nil {
		t.Fatalf("release %s v%d: %v", name, version, err)
	}
	return rls.Info.Status
}

// testChart is a chart of a ConfigMap and two test hooks, test-a and
// test-b.
func testChart(version string) *chart.Chart {
	hook := func(name string) *chart.File {
		return &chart.File{Name: "templates/" + name + ".yaml", Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
			"\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: t, image: busybox}]\n")}
	}
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: version},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n")},
			hook("test-a"), hook("test-b")},
	}
}

func newObject(mutate func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	obj := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "apps"}}
	if mutate != nil {
		mutate(obj)
	}
	return obj
}

func install(t *testing.T, f *fixture, obj *helmv2.HelmRelease) *helmrelease.Release {
	t.Helper()
	rls, err := Install(context.Background(), f.cfg, obj, testChart("1.0.0"), map[string]any{"replicas": 1})
	if err != nil {
		t.Fatal(err)
	}
	return rls
}

// TestInstallStoresDeployedRelease: the release takes the spec's name in
// the target namespace and is stored deployed; the storage observer sees
// each write.
func TestInstallStoresDeployedRelease(t *testing.T) {
	f := newFixture(t)
	obj := newObject(func(hr *helmv2.HelmRelease) { hr.Spec.TargetNamespace = "apps" })
	rls := install(t, f, obj)
	if rls.Name != "apps-app" || rls.Namespace != "apps" || rls.Version != 1 {
		t.Errorf("installed %s/%s.v%d", rls.Namespace, rls.Name, rls.Version)
	}
	if s := f.status(t, "apps-app", 1); s != helmrelease.StatusDeployed {
		t.Errorf("stored %s", s)
	}
	if n := release.Newest(f.observed); n == nil || n.Snapshot.Status != "deployed" || n.Snapshot.ChartVersion != "1.0.0" {
		t.Errorf("observed %+v", n)
	}
}

// TestInstallWaitFailureStoresFailedRelease: a failed wait fails the
// install and leaves the release stored failed; with spec.install.disableWait
// there is no wait to fail.
func TestInstallWaitFailureStoresFailedRelease(t *testing.T) {
	f := newFixture(t)
	f.kube.WaitError = errors.New("timeout waiting for: [Deployment/apps/app status: 'InProgress']")
	if _, err := Install(context.Background(), f.cfg, newObject(nil), testChart("1.0.0"), nil); err == nil {
		t.Fatal("install succeeded")
	}
	if s := f.status(t, "app", 1); s != helmrelease.StatusFailed {
		t.Errorf("stored %s", s)
	}
	f = newFixture(t)
	f.kube.WaitError = errors.New("waited")
	install(t, f, newObject(func(hr *helmv2.HelmRelease) { hr.Spec.Install = &helmv2.Install{DisableWait: true} }))
}

// TestUpgradeKeepsMaxHistory: each upgrade stores a new deployed version
// and supersedes the last; storage keeps spec.maxHistory versions.
func TestUpgradeKeepsMaxHistory(t *testing.T) {
	f := newFixture(t)
	obj := newObject(func(hr *helmv2.HelmRelease) { hr.Spec.MaxHistory = ptr(2) })
	install(t, f, obj)
	for i := 2; i <= 3; i++ {
		rls, err := Upgrade(context.Background(), f.cfg, obj, testChart("1.0.1"), map[string]any{"replicas": i})
		if err != nil {
			t.Fatal(err)
		}
		if rls.Version != i || rls.Config["replicas"] != i {
			t.Errorf("upgrade %d stored v%d with %v", i, rls.Version, rls.Config)
		}
	}
	all, err := f.cfg.Releases.History("app")
	if err != nil || len(all) != 2 {
		t.Fatalf("%d versions in storage (%v), want 2", len(all), err)
	}
	if f.status(t, "app", 2) != helmrelease.StatusSuperseded || f.status(t, "app", 3) != helmrelease.StatusDeployed {
		t.Error("v2 not superseded by v3")
	}
}

// TestTestRunsSelectedHooks: spec.test.filters excludes a hook from the
// run; the others run and are recorded on the release.
func TestTestRunsSelectedHooks(t *testing.T) {
	f := newFixture(t)
	obj := newObject(func(hr *helmv2.HelmRelease) {
		hr.Spec.Test = &helmv2.Test{Enable: true, Filters: &[]helmv2.Filter{{Name: "test-b", Exclude: true}}}
	})
	install(t, f, obj)
	rls, err := Test(f.cfg, obj, "app")
	if err != nil {
		t.Fatal(err)
	}
	hooks := release.TestHooks(rls, TestFilters(obj))
	if len(hooks) != 1 || hooks["test-a"] == nil || hooks["test-a"].Phase != helmrelease.HookPhaseSucceeded.String() {
		t.Errorf("test hooks %v", hooks)
	}
	for _, h := range rls.Hooks {
		if h.Name == "test-b" && !h.LastRun.StartedAt.IsZero() {
			t.Error("the excluded hook ran")
		}
	}
}

// TestRollbackStoresPreviousAsNewVersion: a rollback to v1 stores v3 with
// v1's chart and values and supersedes v2.
func TestRollbackStoresPreviousAsNewVersion(t *testing.T) {
	f := newFixture(t)
	obj := newObject(nil)
	install(t, f, obj)
	if _, err := Upgrade(context.Background(), f.cfg, obj, testChart("2.0.0"), nil); err != nil {
		t.Fatal(err)
	}
	if err := Rollback(f.cfg, obj, "app", 1); err != nil {
		t.Fatal(err)
	}
	rls, err := LastRelease(f.cfg, "app")
	if err != nil {
		t.Fatal(err)
	}
	if rls.Version != 3 || rls.Chart.Metadata.Version != "1.0.0" || rls.Info.Status != helmrelease.StatusDeployed {
		t.Errorf("after rollback v%d %s chart %s", rls.Version, rls.Info.Status, rls.Chart.Metadata.Version)
	}
	if s := f.status(t, "app", 2); s != helmrelease.StatusSuperseded {
		t.Errorf("v2 %s", s)
	}
}

// TestUninstallKeepsHistoryWhenAsked: an uninstall removes the release
// from storage, or with spec.uninstall.keepHistory leaves it uninstalled;
// a release not in storage is driver.ErrReleaseNotFound.
func TestUninstallKeepsHistoryWhenAsked(t *testing.T) {
	f := newFixture(t)
	obj := newObject(nil)
	install(t, f, obj)
	if err := Uninstall(f.cfg, obj, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := LastRelease(f.cfg, "app"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("after uninstall: %v", err)
	}
	if err := Uninstall(f.cfg, obj, "app"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("uninstall of no release: %v", err)
	}
	obj.Spec.Uninstall = &helmv2.Uninstall{KeepHistory: true}
	install(t, f, obj)
	if err := Uninstall(f.cfg, obj, "app"); err != nil {
		t.Fatal(err)
	}
	if rls, err := LastRelease(f.cfg, "app"); err != nil || rls.Info.Status != helmrelease.StatusUninstalled {
		t.Errorf("kept history: %v %v", rls, err)
	}
}

// TestUnlockFailsPendingRelease: a release left pending-upgrade is stored
// failed; a deployed one is left as it is.
func TestUnlockFailsPendingRelease(t *testing.T) {
	f := newFixture(t)
	rls := install(t, f, newObject(nil))
	if got, was, err := Unlock(f.cfg, "app"); got != nil || was != "" || err != nil {
		t.Errorf("unlock of a deployed release: %v %q %v", got, was, err)
	}
	rls.Info.Status = helmrelease.StatusPendingUpgrade
	if err := f.cfg.Releases.Update(rls); err != nil {
		t.Fatal(err)
	}
	got, was, err := Unlock(f.cfg, "app")
	if err != nil || got == nil || was != helmrelease.StatusPendingUpgrade {
		t.Fatalf("unlock: %v %q %v", got, was, err)
	}
	if s := f.status(t, "app", 1); s != helmrelease.StatusFailed {
		t.Errorf("stored %s", s)
	}
	if _, _, err := Unlock(f.cfg, "none"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("unlock of no release: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
