package e2e

import (
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// paymentAPI is the seed example's repository content: apps/payment-api.
var paymentAPI = map[string]string{
	"apps/payment-api/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: payment-config
data:
  CURRENCY: EUR
  TIMEOUT: "30s"
`,
	"apps/payment-api/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: payment-api
spec:
  replicas: 1
  selector:
    matchLabels: {app: payment-api}
  template:
    metadata:
      labels: {app: payment-api}
    spec:
      containers:
        - name: api
          image: ghcr.io/acme/payment-api:1.4.2
`,
}

// seedApplication is the seed Application, as an Argo CD user
// writes it, its repoURL pointed at url.
func seedApplication(t *testing.T, name, url, namespace string, automated bool) *argov1.Application {
	t.Helper()
	app := &argov1.Application{}
	if err := yaml.UnmarshalStrict([]byte(seedYAML(name, url, namespace, automated)), app); err != nil {
		t.Fatal(err)
	}
	return app
}

// seedYAML is seedApplication's YAML document.
func seedYAML(name, url, namespace string, automated bool) string {
	policy := "  syncPolicy:\n    automated: {prune: true, selfHeal: true}\n    syncOptions: [CreateNamespace=true]\n"
	if !automated {
		policy = "  syncPolicy:\n    syncOptions: [CreateNamespace=true]\n"
	}
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: ` + name + `, namespace: argocd}
spec:
  project: default
  source: {repoURL: ` + url + `, targetRevision: main, path: apps/payment-api}
  destination: {server: https://kubernetes.default.svc, namespace: ` + namespace + `}
` + policy
}

// TestSeedApplicationSyncsAndSelfHeals runs the seed Application: it
// becomes Synced and Healthy at the commit's SHA with one history entry,
// an edit of a Git-declared key is undone (the time it took is logged), a
// key added out of band stays, and a deleted object is recreated.
func TestSeedApplicationSyncsAndSelfHeals(t *testing.T) {
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, paymentAPI)
	sha := repo.MustGit(t, "rev-parse", "HEAD")
	ns := uniqueName("production")
	app := seedApplication(t, "payment-api", repo.URL(), ns, true)
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
	if app.Status.Sync.Revision != sha {
		t.Errorf("status.sync.revision = %q, want %q", app.Status.Sync.Revision, sha)
	}
	if len(app.Status.History) != 1 || app.Status.History[0].Revision != sha || app.Status.History[0].ID != 0 {
		t.Errorf("status.history = %+v, want one entry at %s", app.Status.History, sha)
	}
	if app.Status.SourceType != argov1.SourceTypeDirectory || app.Status.ReconciledAt == nil {
		t.Errorf("sourceType %q, reconciledAt %v", app.Status.SourceType, app.Status.ReconciledAt)
	}
	if want := []string{"ghcr.io/acme/payment-api:1.4.2"}; strings.Join(app.Status.Summary.Images, ",") != want[0] {
		t.Errorf("summary.images = %v, want %v", app.Status.Summary.Images, want)
	}

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: "payment-config"}
	if err := env.Client.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	if got := cm.Annotations[argov1.AnnotationTrackingID]; got != "payment-api:/ConfigMap:"+ns+"/payment-config" {
		t.Errorf("tracking id %q", got)
	}
	t.Run("an edit of a Git-declared key is undone", func(t *testing.T) {
		patch := []byte(`{"data":{"CURRENCY":"USD","ADDED":"by-hand"}}`)
		start := time.Now()
		if err := env.Client.Patch(t.Context(), cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForTimeout(t, env.Client, cm, "CURRENCY restored", appTimeout, func() bool { return cm.Data["CURRENCY"] == "EUR" })
		t.Logf("self-heal: the edited key was restored %s after the edit", time.Since(start).Round(time.Millisecond))
		if cm.Data["ADDED"] != "by-hand" {
			t.Errorf("a key added out of band was removed: %v", cm.Data)
		}
	})
	t.Run("a deleted object is recreated", func(t *testing.T) {
		if err := env.Client.Delete(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForTimeout(t, env.Client, cm, "payment-config recreated", appTimeout, func() bool { return cm.UID != "" && cm.Data["CURRENCY"] == "EUR" })
	})
	waitApp(t, app, "Synced again", syncedHealthy(app))
	if len(app.Status.History) != 1 {
		t.Errorf("self-heals added history entries: %d", len(app.Status.History))
	}
	t.Run("the printer columns are Argo CD's", func(t *testing.T) {
		// What `kubectl get applications -n argocd` prints: the server's
		// table, columns of priority 0 (-o wide adds the others).
		tb := serverTable(t, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/payment-api")
		if got := strings.Join(tb.columns, ","); got != "NAME,SYNC STATUS,HEALTH STATUS" {
			t.Errorf("columns %q, want NAME,SYNC STATUS,HEALTH STATUS", got)
		}
		if got := strings.Join(tb.rows[0], ","); got != "payment-api,Synced,Healthy" {
			t.Errorf("row %q, want payment-api,Synced,Healthy", got)
		}
		if got := strings.Join(tb.wide, ","); got != "NAME,SYNC STATUS,HEALTH STATUS,REVISION,PROJECT" {
			t.Errorf("-o wide columns %q", got)
		}
	})
}
