package e2e

import (
	"encoding/base64"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/appdiff"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// diffRepo is the seed's payment-api with a Secret beside it.
func diffRepo() map[string]string {
	files := map[string]string{"apps/payment-api/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: payment-db
stringData:
  password: git-s3cret
`}
	for k, v := range paymentAPI {
		files[k] = v
	}
	return files
}

// pendingObjects decodes app's pending-diff annotation.
func pendingObjects(t *testing.T, app *argov1.Application) []appdiff.Object {
	t.Helper()
	objs, err := appdiff.Decode(app.Annotations[appdiff.Annotation])
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findDiffObject(objs []appdiff.Object, kind, name string) *appdiff.Object {
	for i := range objs {
		if objs[i].Kind == kind && objs[i].Name == name {
			return &objs[i]
		}
	}
	return nil
}

// TestComparePendingDiffNamesFieldValuesAndManager checks Eddy's drift
// report on a manual-sync Application: before the first sync every object
// is listed whole as missing; once synced the annotation is gone; a
// `kubectl edit` of a Git-declared key (a merge patch by field manager
// kubectl-edit) shows that field with its live and desired values and
// kubectl-edit as the manager, Secret values masked, and the built
// `eddy app diff` prints it with exit code 1.
func TestComparePendingDiffNamesFieldValuesAndManager(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, diffRepo())
	ns := uniqueName("pending-diff")
	app := seedApplication(t, uniqueName("pending-diff"), repo.URL(), ns, false)
	create(t, app)
	waitApp(t, app, "OutOfSync with a pending diff", func() bool {
		return app.Status.Sync.Status == argov1.SyncStatusOutOfSync && app.Annotations[appdiff.Annotation] != ""
	})
	objs := pendingObjects(t, app)
	if len(objs) != 3 {
		t.Fatalf("pending diff of a never-synced app lists %d objects, want 3: %+v", len(objs), objs)
	}
	cmMissing := findDiffObject(objs, "ConfigMap", "payment-config")
	if cmMissing == nil || len(cmMissing.Fields) != 1 || cmMissing.Fields[0].Path != "" || cmMissing.Fields[0].Live != nil ||
		!strings.Contains(string(cmMissing.Fields[0].Desired), `"CURRENCY":"EUR"`) {
		t.Errorf("a missing ConfigMap is not listed whole as missing: %+v", cmMissing)
	}
	if strings.Contains(app.Annotations[appdiff.Annotation], "git-s3cret") ||
		strings.Contains(app.Annotations[appdiff.Annotation], base64.StdEncoding.EncodeToString([]byte("git-s3cret"))) {
		t.Errorf("the pending diff holds a Secret value: %s", app.Annotations[appdiff.Annotation])
	}

	requestSync(t, app, `{"operation":{"initiatedBy":{"username":"me"},"sync":{"syncOptions":["CreateNamespace=true"]}}}`)
	waitApp(t, app, "Synced without a pending diff", func() bool {
		_, has := app.Annotations[appdiff.Annotation]
		return app.Operation == nil && app.Status.Sync.Status == argov1.SyncStatusSynced && !has
	})

	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, "payment-config"
	edit := client.RawPatch("application/merge-patch+json", []byte(`{"data":{"CURRENCY":"USD","ADDED":"by-hand"}}`))
	if err := env.Client.Patch(t.Context(), cm, edit, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = ns, "payment-db"
	hacked := base64.StdEncoding.EncodeToString([]byte("edited-s3cret"))
	if err := env.Client.Patch(t.Context(), secret, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"password":"`+hacked+`"}}`)), client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	waitApp(t, app, "OutOfSync with the edited fields", func() bool {
		objs, _ := appdiff.Decode(app.Annotations[appdiff.Annotation])
		return app.Status.Sync.Status == argov1.SyncStatusOutOfSync && findDiffObject(objs, "ConfigMap", "payment-config") != nil &&
			findDiffObject(objs, "Secret", "payment-db") != nil
	})
	objs = pendingObjects(t, app)
	if len(objs) != 2 {
		t.Errorf("pending diff lists %d objects, want the ConfigMap and the Secret: %+v", len(objs), objs)
	}
	got := findDiffObject(objs, "ConfigMap", "payment-config")
	want := appdiff.Field{Path: "/data/CURRENCY", Live: []byte(`"USD"`), Desired: []byte(`"EUR"`), Manager: "kubectl-edit"}
	if len(got.Fields) != 1 || got.Fields[0].Path != want.Path || string(got.Fields[0].Live) != string(want.Live) ||
		string(got.Fields[0].Desired) != string(want.Desired) || got.Fields[0].Manager != want.Manager {
		t.Errorf("ConfigMap diff %+v, want only %+v (a key added out of band is not drift)", got.Fields, want)
	}
	raw := app.Annotations[appdiff.Annotation]
	for _, v := range []string{"git-s3cret", "edited-s3cret", hacked, base64.StdEncoding.EncodeToString([]byte("git-s3cret"))} {
		if strings.Contains(raw, v) {
			t.Errorf("the pending diff holds the Secret value %q: %s", v, raw)
		}
	}
	if s := findDiffObject(objs, "Secret", "payment-db"); len(s.Fields) != 1 || s.Fields[0].Path != "/data/password" ||
		string(s.Fields[0].Live) != `"`+appdiff.MaskedLive+`"` || s.Fields[0].Manager != "kubectl-edit" {
		t.Errorf("Secret diff %+v, want /data/password masked, by kubectl-edit", s.Fields)
	}

	out, code := runEddy(t, "app", "diff", app.Name)
	for _, line := range []string{"===== /ConfigMap " + ns + "/payment-config ======", "/data/CURRENCY (changed by kubectl-edit)", `- "USD"`, `+ "EUR"`} {
		if !strings.Contains(out, line) {
			t.Errorf("eddy app diff lacks %q:\n%s", line, out)
		}
	}
	if code != 1 || strings.Contains(out, "edited-s3cret") || strings.Contains(out, hacked) {
		t.Errorf("eddy app diff exit code %d (want 1), output:\n%s", code, out)
	}
}
