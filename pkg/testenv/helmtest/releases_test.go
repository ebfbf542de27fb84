package helmtest_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestReleasesReadSecretStorage installs and upgrades a chart with Helm's actions and the
// secrets driver on a local cluster (api profile), as helm-controller will, and checks that
// Releases and History see what `helm list -a` and `helm history` would.
func TestReleasesReadSecretStorage(t *testing.T) {
	ctx := context.Background()
	cluster, err := localcluster.Start(ctx, localcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	const ns = "apps"
	if _, err := kube.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := cluster.KubeconfigPath

	if rels := helmtest.Releases(t, kubeconfig, ns); len(rels) != 0 {
		t.Fatalf("releases before any install: %d", len(rels))
	}
	if h := helmtest.History(t, kubeconfig, ns, "hello"); h != nil {
		t.Fatalf("history before any install: %d revisions", len(h))
	}

	dir := helmtest.MinimalChart(t, "hello", "0.1.0")
	v1, err := loader.Load(helmtest.PackageChart(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(helmtest.ActionConfig(t, kubeconfig, ns))
	install.ReleaseName, install.Namespace = "hello", ns
	if _, err := install.Run(v1, map[string]any{"greeting": "hi"}); err != nil {
		t.Fatalf("install: %v", err)
	}
	v2, err := loader.Load(helmtest.PackageChart(t, dir, helmtest.WithVersion("0.2.0")))
	if err != nil {
		t.Fatal(err)
	}
	upgrade := action.NewUpgrade(helmtest.ActionConfig(t, kubeconfig, ns))
	upgrade.Namespace = ns
	if _, err := upgrade.Run("hello", v2, nil); err != nil {
		t.Fatalf("upgrade: %v", err)
	}

	// The release's object exists, rendered from revision 2. Helm's upgrade given no values
	// and no ResetValues reuses the previous ones (helm-controller sets ResetValues).
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["chartVersion"] != "0.2.0" || cm.Data["greeting"] != "hi" {
		t.Errorf("ConfigMap data = %v, want chartVersion 0.2.0 and the installed greeting", cm.Data)
	}
	// The storage is Helm's: a Secret per revision, type helm.sh/release.v1.
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 2 || secrets.Items[0].Type != "helm.sh/release.v1" {
		t.Errorf("release secrets: %d (type %q), want 2 of type helm.sh/release.v1", len(secrets.Items), secrets.Items[0].Type)
	}

	rels := helmtest.Releases(t, kubeconfig, ns)
	if len(rels) != 1 || rels[0].Name != "hello" || rels[0].Version != 2 ||
		rels[0].Info.Status != release.StatusDeployed || rels[0].Chart.Metadata.Version != "0.2.0" {
		t.Fatalf("releases = %v, want hello revision 2 deployed with chart 0.2.0", describe(rels))
	}
	h := helmtest.History(t, kubeconfig, ns, "hello")
	if len(h) != 2 || h[0].Version != 1 || h[0].Info.Status != release.StatusSuperseded ||
		h[1].Version != 2 || h[1].Info.Status != release.StatusDeployed {
		t.Errorf("history = %v, want revision 1 superseded, 2 deployed", describe(h))
	}
	if rels := helmtest.Releases(t, kubeconfig, "default"); len(rels) != 0 {
		t.Errorf("releases in another namespace: %v", describe(rels))
	}
}

func describe(rels []*release.Release) []string {
	var out []string
	for _, r := range rels {
		out = append(out, r.Name+"#"+strconv.Itoa(r.Version)+" "+r.Info.Status.String()+" "+r.Chart.Metadata.Version)
	}
	return out
}
