package e2e

import (
	"fmt"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func deployment(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
        - name: sidecar
          image: busybox:1.36
        - name: api
          image: ghcr.io/acme/api:1.0.0
`
}

// TestCompareIgnoreDifferencesKeepsAppSyncedAndUnhealed: three
// Deployments, each with an ignoreDifferences rule of one kind
// (argocd-contract §1.10): a JSON pointer (/spec/replicas), a jq path
// expression (the image of the container named api) and a trusted
// manager (kube-controller-manager writing replicas through the scale
// subresource, as an HPA does in the seed example). Each edit leaves the
// app Synced and is not reverted by self-heal, while an edit of a
// ConfigMap beside them is.
func TestCompareIgnoreDifferencesKeepsAppSyncedAndUnhealed(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/pointer.yaml":  deployment("pointer"),
		"app/jq.yaml":       deployment("jq"),
		"app/managers.yaml": deployment("managers"),
		"app/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sentinel\ndata:\n  k: git\n",
	})
	ns := uniqueName("ignore")
	app := exampleApp(uniqueName("ignore"), repo.URL(), "app", ns, nil)
	app.Spec.IgnoreDifferences = []argov1.ResourceIgnoreDifferences{
		{Group: "apps", Kind: "Deployment", Name: "pointer", JSONPointers: []string{"/spec/replicas"}},
		{Group: "apps", Kind: "Deployment", Name: "jq", JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "api") | .image`}},
		{Group: "apps", Kind: "Deployment", Name: "managers", ManagedFieldsManagers: []string{"kube-controller-manager"}},
	}
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))

	edit := func(name, patch string) {
		t.Helper()
		d := &appsv1.Deployment{}
		d.Namespace, d.Name = ns, name
		if err := env.Client.Patch(t.Context(), d, client.RawPatch("application/json-patch+json", []byte(patch)), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	}
	edit("pointer", `[{"op":"replace","path":"/spec/replicas","value":3}]`)
	edit("jq", `[{"op":"replace","path":"/spec/template/spec/containers/1/image","value":"ghcr.io/acme/api:hotfix"}]`)
	scale := &autoscalingv1.Scale{}
	managed := &appsv1.Deployment{}
	managed.Namespace, managed.Name = ns, "managers"
	if err := env.Client.SubResource("scale").Get(t.Context(), managed, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 4
	if err := env.Client.SubResource("scale").Update(t.Context(), managed, client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager")); err != nil {
		t.Fatal(err)
	}
	// The sentinel's edit is drift: once self-heal restored it, the
	// controller has compared everything edited before it.
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, "sentinel"
	if err := env.Client.Patch(t.Context(), cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"k":"edited"}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForTimeout(t, env.Client, cm, "sentinel restored", appTimeout, func() bool { return cm.Data["k"] == "git" })
	waitApp(t, app, "Synced after the self-heal", func() bool {
		return app.Operation == nil && app.Status.Sync.Status == argov1.SyncStatusSynced
	})
	for name, want := range map[string]string{"pointer": "replicas 3", "jq": "image ghcr.io/acme/api:hotfix", "managers": "replicas 4"} {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("replicas %d", *d.Spec.Replicas)
		if strings.HasPrefix(want, "image") {
			got = "image " + d.Spec.Template.Spec.Containers[1].Image
		}
		if got != want {
			t.Errorf("Deployment %s: %s, want the ignored edit kept (%s); last operation: %s", name, got, want, describeOperation(app))
		}
	}
	for _, r := range app.Status.Resources {
		if r.Status != argov1.SyncStatusSynced {
			t.Errorf("%s/%s is %s, want Synced", r.Kind, r.Name, r.Status)
		}
	}
}

// describeOperation is app's last operation and its results, for a
// failure message.
func describeOperation(app *argov1.Application) string {
	st := app.Status.OperationState
	if st == nil {
		return "none"
	}
	out := fmt.Sprintf("%s %q resources %v:", st.Phase, st.Message, st.Operation.Sync.Resources)
	if st.SyncResult != nil {
		for _, r := range st.SyncResult.Resources {
			out += fmt.Sprintf(" %s/%s %s %q;", r.Kind, r.Name, r.Status, r.Message)
		}
	}
	return out
}
