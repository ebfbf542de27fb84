// Package e2e holds helm-controller's acceptance tests: all four built
// controllers run as processes against a `full` local cluster (kwok nodes,
// so Deployments become Available), with charts served over HTTP with basic
// auth, from an in-process OCI registry and from a Git repository.
package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/release"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}},
		testenv.WithGitServer(&gitSrv), installGatewayAPI, startControllers)
}

// installGatewayAPI installs a schemaless HTTPRoute CRD
// (gateway.networking.k8s.io/v1): podinfo's chart renders an HTTPRoute
// with the production values of flux2-kustomize-helm-example.
func installGatewayAPI(e *testenv.Environment) (func(), error) {
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "httproutes.gateway.networking.k8s.io", Annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/1538"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gateway.networking.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "httproutes", Singular: "httproute", Kind: "HTTPRoute", ListKind: "HTTPRouteList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	ctx := context.Background()
	if err := e.Client.Create(ctx, crd); err != nil {
		return nil, err
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return func() {}, err
}

// ctrls are the four controllers the tests share, by name.
var ctrls *testenv.Controllers

// startControllers builds and runs the four controllers, the three
// reconciling ones sending their events to notification-controller, as
// `eddy dev` and a cluster install do.
func startControllers(e *testenv.Environment) (func(), error) {
	dir, err := os.MkdirTemp("", "eddy-e2e-")
	if err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	events, receiver, storage := ports[0], ports[1], ports[2]
	eventsURL := fmt.Sprintf("--events-addr=http://127.0.0.1:%d", events)
	retry := []string{"--min-retry-delay=200ms", "--max-retry-delay=5s"}
	args := map[string][]string{
		"notification-controller": {fmt.Sprintf("--events-addr=127.0.0.1:%d", events), fmt.Sprintf("--receiverAddr=127.0.0.1:%d", receiver)},
		"source-controller": append([]string{eventsURL, "--storage-path=" + filepath.Join(dir, "storage"),
			fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage)}, retry...),
		"kustomize-controller": append([]string{eventsURL}, retry...),
		"helm-controller":      append([]string{eventsURL}, retry...),
	}
	ctrls, err = testenv.StartControllers(e, dir, []string{"notification-controller", "source-controller", "kustomize-controller", "helm-controller"}, args)
	if err != nil {
		return nil, err
	}
	return ctrls.Stop, nil
}

// restart starts the controller name again, as a kubelet restarts a
// container, its log in a new file.
func restart(t *testing.T, name string) { t.Helper(); ctrls.Restart(t, env, name) }

// logsOnFailure prints the controllers' logs when t fails.
func logsOnFailure(t *testing.T) { ctrls.LogsOnFailure(t) }

// releaseTimeout bounds a wait for a Helm action: an install waits for
// the release's Deployments to become Available on kwok nodes.
const releaseTimeout = 3 * time.Minute

// waitFor is testenv.WaitFor with releaseTimeout.
func waitFor(t *testing.T, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitForTimeout(t, env.Client, obj, what, releaseTimeout, cond)
}

// readyCondition returns hr's Ready condition (never nil).
func readyCondition(hr *helmv2.HelmRelease) metav1.Condition {
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// waitReady waits until hr is Ready=True for its current generation.
func waitReady(t *testing.T, hr *helmv2.HelmRelease) *helmv2.HelmRelease {
	t.Helper()
	waitFor(t, hr, "Ready", func() bool {
		c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && hr.Status.ObservedGeneration == hr.Generation
	})
	return hr
}

// expectedObjects reads expected-objects.txt of a helm-template case
// (lines `<apiVersion> <Kind> <namespace>/<name>`, rendered into the
// namespace podinfo) as inventory ids `<ns>_<name>_<group>_<Kind>` for a
// release in namespace ns: Helm installs objects rendered without a
// namespace, and those of namespace podinfo, into the release namespace.
func expectedObjects(t *testing.T, testcase, ns string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.TestdataDir(t), "expected", "podinfo", "helm-template", testcase, "expected-objects.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("expected-objects.txt: unexpected line %q", line)
		}
		group := ""
		if g, _, ok := strings.Cut(f[0], "/"); ok {
			group = g
		}
		_, name, _ := strings.Cut(f[2], "/")
		ids = append(ids, fmt.Sprintf("%s_%s_%s_%s", ns, name, group, f[1]))
	}
	sort.Strings(ids)
	return ids
}

// inventory returns the sorted ids of hr's status.inventory.
func inventory(hr *helmv2.HelmRelease) []string {
	var ids []string
	if hr.Status.Inventory != nil {
		for _, e := range hr.Status.Inventory.Entries {
			ids = append(ids, e.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// create creates obj in the cluster, failing t on error.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// describe lists releases as `name vN status chart-version` for messages.
func describe(rels []*release.Release) string {
	var out []string
	for _, r := range rels {
		out = append(out, fmt.Sprintf("%s/%s v%d %s %s", r.Namespace, r.Name, r.Version, r.Info.Status, r.Chart.Metadata.Version))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// dirFiles reads the files below root as a map from prefix + their
// slash-separated path to their content, for testenv's Git repositories.
func dirFiles(t *testing.T, root, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	if err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[prefix+filepath.ToSlash(rel)] = string(b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return files
}

// releasedApp installs chart app 0.1.0 from a new chart server, through
// HelmRepository "charts" and HelmRelease "app" (interval 1h) in a new
// namespace named with prefix, and waits until the release is Ready.
func releasedApp(t *testing.T, prefix string) (ns string, charts *helmtest.ChartServer, hr *helmv2.HelmRelease) {
	t.Helper()
	ns = testenv.NewNamespace(t, env.Client, prefix)
	charts = helmtest.NewChartServer(t)
	charts.Add(helmtest.PackageChart(t, helmtest.MinimalChart(t, "app", "0.1.0")))
	create(t, &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "charts", Namespace: ns},
		Spec: sourcev1.HelmRepositorySpec{URL: charts.URL(), Interval: metav1.Duration{Duration: time.Hour}}})
	hr = &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Hour},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "app", Version: "*",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "charts"}}}}}
	create(t, hr)
	waitReady(t, hr)
	return ns, charts, hr
}
