package helmstorage

import (
	"context"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestObjectsOfAHelmSecret decodes a storage Secret written by Helm's own
// Secret driver (base64, gzip, JSON), as helm-controller stores releases.
func TestObjectsOfAHelmSecret(t *testing.T) {
	manifest := "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n" +
		"---\n# Source: app/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: other\n"
	rls := &release.Release{
		Name: "app", Namespace: "apps", Version: 2, Manifest: manifest,
		Info:  &release.Info{Status: release.StatusDeployed},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}},
	}
	cs := fake.NewClientset()
	if err := driver.NewSecrets(cs.CoreV1().Secrets("apps")).Create(SecretName("app", 2), rls); err != nil {
		t.Fatal(err)
	}
	secret, err := cs.CoreV1().Secrets("apps").Get(context.Background(), "sh.helm.release.v1.app.v2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(secret.Data["release"])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	if want := []string{"ServiceAccount//app", "Deployment/other/app"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("objects %v, want %v", got, want)
	}
	for _, bad := range [][]byte{nil, []byte("not base64!")} {
		if _, err := Objects(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
