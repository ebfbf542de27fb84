package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func deployment(ns string, replicas int, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: payment-api
  namespace: %s
spec:
  replicas: %d
  selector: {matchLabels: {app: payment-api}}
  template:
    metadata: {labels: {app: payment-api}}
    spec:%s
      containers: [{name: api, image: "ghcr.io/example/payment-api:1.0.0"}]
`, ns, replicas, extra)
}

func paymentFiles(ns string, replicas int) map[string]string {
	return map[string]string{
		"apps/payment-api/namespace.yaml":  fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", ns),
		"apps/payment-api/deployment.yaml": deployment(ns, replicas, ""),
		"apps/payment-api/service.yaml": fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: payment-api, namespace: %s}\n"+
			"spec: {selector: {app: payment-api}, ports: [{port: 80, targetPort: 8080}]}\n", ns),
		"apps/payment-api/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: payment-config, namespace: %s}\n"+
			"data: {FEATURE_X: \"true\"}\n", ns),
	}
}

// TestPaymentScenario is the seed scenario: a Deployment, Service and
// ConfigMap in namespace production-like ns; a manual edit reverted with an
// event naming the field, values and manager; a scale-up awaited healthy;
// a Deployment that never becomes ready reported as HealthCheckFailed; a
// removed file pruned.
func TestPaymentScenario(t *testing.T) {
	ctx := context.Background()
	fluxNS := newNamespace(t)
	appNS := fluxNS + "-production"
	r := newRepo(t, paymentFiles(appNS, 2))
	head := r.MustGit(t, "rev-parse", "HEAD")
	src := newSource(t, fluxNS, "platform", r)
	k := newKustomization(t, fluxNS, "apps", "platform", func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./apps"
		k.Spec.Wait = true
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
	})
	waitApplied(t, k, "main@sha1:"+head)
	if c := readyCond(k); c.Reason != kustomizev1.ReconciliationSucceededReason || c.Message != "Applied revision: main@sha1:"+head {
		t.Errorf("Ready %s %q", c.Reason, c.Message)
	}
	if h := apimeta.FindStatusCondition(k.Status.Conditions, kustomizev1.HealthyCondition); h == nil || !strings.HasPrefix(h.Message, "Health check passed in") {
		t.Errorf("Healthy condition %+v", h)
	}
	if h := k.Status.History; len(h) != 1 || !strings.HasPrefix(h[0].Digest, "sha256:") || h[0].Metadata["revision"] != "main@sha1:"+head ||
		h[0].LastReconciledStatus != kustomizev1.ReconciliationSucceededReason || h[0].TotalReconciliations != 1 {
		t.Errorf("history after the first apply: %+v", h)
	}
	wantIDs := []string{"_" + appNS + "__Namespace", appNS + "_payment-api__Service", appNS + "_payment-api_apps_Deployment", appNS + "_payment-config__ConfigMap"}
	var ids []string
	for _, e := range k.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	for _, w := range wantIDs {
		if !strings.Contains(strings.Join(ids, " "), w) {
			t.Errorf("inventory %v lacks %s", ids, w)
		}
	}

	// Drift: another field manager edits the ConfigMap.
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "payment-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["FEATURE_X"] = "false"
	if err := env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || cm.Data["FEATURE_X"] != "true" {
		t.Errorf("drift not corrected: %v %v", cm.Data, err)
	}
	want := fmt.Sprintf(`ConfigMap/%s/payment-config drifted: .data.FEATURE_X "true" → "false" (by kubectl-edit); corrected`, appNS)
	if evs := kubeEvents(t, fluxNS, "apps", "DriftCorrected"); len(evs) != 1 || evs[0] != want {
		t.Errorf("drift events %q, want %q", evs, want)
	}

	// The same build again is the same snapshot, reconciled twice.
	if h := k.Status.History; len(h) != 1 || h[0].TotalReconciliations != 2 {
		t.Errorf("history after a second reconcile of the same build: %+v", h)
	}

	// Scale 2 → 4, awaited healthy.
	rev := push(t, r, src, map[string]string{"apps/payment-api/deployment.yaml": deployment(appNS, 4, "")}, "scale up")
	waitApplied(t, k, rev)
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "payment-api"}, dep); err != nil || dep.Status.AvailableReplicas != 4 {
		t.Errorf("after the scale-up: availableReplicas %d (%v)", dep.Status.AvailableReplicas, err)
	}

	// A Deployment whose pods can never be scheduled never becomes ready.
	rev = push(t, r, src, map[string]string{"apps/payment-api/deployment.yaml": deployment(appNS, 4,
		"\n      nodeSelector: {no-such-node: \"true\"}")}, "unschedulable")
	// While the health checks run, Reconciling says so. Flux compatible.
	waitFor(t, k, "Reconciling: Running health checks", func() bool {
		c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReconcilingCondition)
		return c != nil && c.Reason == meta.ProgressingReason && c.Message == "Running health checks for revision "+rev+" with a timeout of 30s"
	})
	if c := readyCond(k); c.Status != metav1.ConditionUnknown || c.Message != "Reconciliation in progress" {
		t.Errorf("Ready during the reconcile: %s %q", c.Status, c.Message)
	}
	c := waitFailed(t, k, kustomizev1.HealthCheckFailedReason)
	if !strings.Contains(c.Message, "Deployment/"+appNS+"/payment-api") || k.Status.LastAttemptedRevision != rev {
		t.Errorf("HealthCheckFailed %q (attempted %s)", c.Message, k.Status.LastAttemptedRevision)
	}

	// Prune: the ConfigMap's file leaves Git.
	rev = push(t, r, src, map[string]string{"apps/payment-api/configmap.yaml": "", "apps/payment-api/deployment.yaml": deployment(appNS, 2, "")}, "drop config")
	waitApplied(t, k, rev)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the removed ConfigMap was not pruned: %v", err)
	}

	// Deleting the Kustomization with prune: true removes its inventory.
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: appNS, Name: "payment-api"}, &appsv1.Deployment{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Deployment survived the deletion of its Kustomization")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestInvalidObjectAppliesNothing commits 20 objects, one invalid: nothing
// is applied and the message names it; fixing the commit applies all 20.
func TestInvalidObjectAppliesNothing(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	files := map[string]string{}
	for i := range 19 {
		files[fmt.Sprintf("cm-%02d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: %s}\ndata: {k: v}\n", i, ns)
	}
	files["svc.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: %s}\nspec: {ports: [{port: 99999}]}\n", ns)
	r := newRepo(t, files)
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "twenty", "src", nil)
	c := waitFailed(t, k, kustomizev1.ReconciliationFailedReason)
	if !strings.Contains(c.Message, "Service/"+ns+"/broken dry-run failed") || !strings.Contains(c.Message, "port") {
		t.Errorf("message %q does not name Service/%s/broken and the reason", c.Message, ns)
	}
	list := &corev1.ConfigMapList{}
	_ = env.Client.List(ctx, list, client.InNamespace(ns))
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "cm-") {
			t.Fatalf("ConfigMap %s was applied from a commit with an invalid object", cm.Name)
		}
	}
	rev := push(t, r, src, map[string]string{"svc.yaml": fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: %s}\nspec: {ports: [{port: 80}]}\n", ns)}, "fix")
	waitApplied(t, k, rev)
	if len(k.Status.Inventory.Entries) != 20 {
		t.Errorf("inventory has %d entries, want 20", len(k.Status.Inventory.Entries))
	}
}

// TestPruneRespectsOptOutAndOwnership keeps objects labelled prune: disabled
// and objects owned by another Kustomization.
func TestPruneRespectsOptOutAndOwnership(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cm := func(name, extra string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s%s}\ndata: {k: v}\n", name, ns, extra)
	}
	r := newRepo(t, map[string]string{"a.yaml": cm("gone", ""), "b.yaml": cm("kept", ", labels: {kustomize.toolkit.fluxcd.io/prune: disabled}"), "c.yaml": cm("stolen", "")})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "owner", "src", nil)
	waitApplied(t, k, "main@sha1:"+r.MustGit(t, "rev-parse", "HEAD"))
	// Another Kustomization takes over "stolen" (its owner labels change).
	stolen := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stolen"}, stolen); err != nil {
		t.Fatal(err)
	}
	stolen.Labels[NameLabel] = "someone-else"
	if err := env.Client.Update(ctx, stolen); err != nil {
		t.Fatal(err)
	}
	rev := push(t, r, src, map[string]string{"a.yaml": "", "b.yaml": "", "c.yaml": "", "d.yaml": cm("new", "")}, "remove all")
	waitApplied(t, k, rev)
	for name, wantGone := range map[string]bool{"gone": true, "kept": false, "stolen": false, "new": false} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
		if gone := apierrors.IsNotFound(err); gone != wantGone {
			t.Errorf("%s: gone=%v, want %v", name, gone, wantGone)
		}
	}
}

// TestCRDWithCustomResource applies a CRD and a custom resource of it from
// one commit in one reconcile.
func TestCRDWithCustomResource(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{
		"crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
		"gadget.yaml": "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g1, namespace: " + ns + "}\nspec: {size: 2}\n",
	})
	newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "crds", "src", nil)
	waitApplied(t, k, "main@sha1:"+r.MustGit(t, "rev-parse", "HEAD"))
	if n := len(k.Status.Inventory.Entries); n != 2 {
		t.Errorf("inventory %v, want the CRD and the Gadget", k.Status.Inventory.Entries)
	}
}

// TestDependsOn applies a Kustomization only once its dependency is Ready.
func TestDependsOn(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{
		"infra/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: infra, namespace: " + ns + "}\n",
		"apps/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: " + ns + "}\n",
	})
	newSource(t, ns, "src", r)
	apps := newKustomization(t, ns, "apps", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./apps"
		k.Spec.DependsOn = []meta.DependencyReference{{Name: "infra"}}
	})
	c := waitFailed(t, apps, meta.DependencyNotReadyReason)
	if want := "unable to get '" + ns + "/infra' dependency: kustomizations.kustomize.toolkit.fluxcd.io \"infra\" not found"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
	infra := newKustomization(t, ns, "infra", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.Path = "./infra"
		k.Spec.Suspend = true
	})
	waitFor(t, apps, "dependency not ready", func() bool {
		return readyCond(apps).Message == "dependency '"+ns+"/infra' is not ready"
	})
	if evs := kubeEvents(t, ns, "apps", meta.DependencyNotReadyReason); len(evs) == 0 || evs[0] != "Dependencies do not meet ready condition, retrying in 1s" {
		t.Errorf("events %q", evs)
	}
	patch := client.MergeFrom(infra.DeepCopy())
	infra.Spec.Suspend = false
	if err := env.Client.Patch(context.Background(), infra, patch); err != nil {
		t.Fatal(err)
	}
	rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	waitApplied(t, infra, rev)
	waitApplied(t, apps, rev)
}

// TestPostBuildFromCluster substitutes variables from a ConfigMap and a
// Secret with Flux's precedence, and names an undefined variable.
func TestPostBuildFromCluster(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: ns},
		Data: map[string]string{"ENV": "staging", "REGION": "eu-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-vars", Namespace: ns},
		StringData: map[string]string{"REGION": "us-2"}}); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-${ENV}\n  namespace: " + ns +
			"\ndata:\n  region: ${REGION}\n  tier: ${TIER:=free}\n  cluster: ${CLUSTER}\n  escaped: $${CLUSTER}\n",
		"raw.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  namespace: " + ns +
			"\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  script: echo ${HOME} ${UNDEFINED}\n",
	})
	newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "vars", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.PostBuild = &kustomizev1.PostBuild{
			Substitute: map[string]string{"ENV": "production", "CLUSTER": "eu-west"},
			SubstituteFrom: []kustomizev1.SubstituteReference{
				{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "secret-vars"}, {Kind: "ConfigMap", Name: "absent", Optional: true},
			},
		}
	})
	waitApplied(t, k, "main@sha1:"+r.MustGit(t, "rev-parse", "HEAD"))
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-production"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["region"] != "us-2" || cm.Data["tier"] != "free" || cm.Data["cluster"] != "eu-west" || cm.Data["escaped"] != "${CLUSTER}" {
		t.Errorf("substituted data %v, want region from the Secret, tier defaulted, cluster inline, $${} escaped", cm.Data)
	}
	raw := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "raw"}, raw); err != nil || raw.Data["script"] != "echo ${HOME} ${UNDEFINED}" {
		t.Errorf("substitute: disabled object changed: %v (%v)", raw.Data, err)
	}

	strict := newKustomization(t, ns, "strict", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"ENV": "x", "REGION": "y"}}
	})
	c := waitFailed(t, strict, meta.BuildFailedReason)
	if !strings.Contains(c.Message, `variable not set (strict mode): "CLUSTER"`) {
		t.Errorf("message %q does not name CLUSTER", c.Message)
	}

	// A missing source of variables keeps the API error, kind and name
	// (`configmaps "x" not found` from the binary's uncached reads, see the
	// e2e package; `ConfigMap "x" not found` from this test's cache). Flux
	// compatible wording (fluxcd/pkg kustomize varsub).
	for _, ref := range []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "cluster-overrides"}, {Kind: "Secret", Name: "cluster-secrets"}} {
		missing := newKustomization(t, ns, "missing-"+strings.ToLower(ref.Kind), "src", func(k *kustomizev1.Kustomization) {
			k.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{ref}}
		})
		c := waitFailed(t, missing, meta.BuildFailedReason)
		prefix, suffix := fmt.Sprintf("substitute from '%s/%s' error: ", ref.Kind, ref.Name), fmt.Sprintf("%q not found", ref.Name)
		if !strings.HasPrefix(c.Message, prefix) || !strings.HasSuffix(c.Message, suffix) {
			t.Errorf("message %q, want %q…%q", c.Message, prefix, suffix)
		}
	}

	// Flux compatible (v1.9.6): a value substituted from a Secret that the
	// API server echoes in an apply error (a label over 63 characters) is
	// masked in the status.
	secretValue := "s3cret-" + strings.Repeat("x", 64)
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "long-secret", Namespace: ns},
		StringData: map[string]string{"LONG": secretValue}}); err != nil {
		t.Fatal(err)
	}
	lr := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: long\n  namespace: " + ns +
		"\n  labels: {env: \"${ENV}\", secret: \"${LONG}\"}\n"})
	newSource(t, ns, "long", lr)
	masked := newKustomization(t, ns, "masked", "long", func(k *kustomizev1.Kustomization) {
		k.Spec.PostBuild = &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{
			{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "long-secret"}}}
	})
	c = waitFailed(t, masked, meta.ReconciliationFailedReason)
	if strings.Contains(c.Message, "s3cret") || !strings.Contains(c.Message, `metadata.labels: Invalid value: "*****"`) {
		t.Errorf("apply error %q: want the Secret's value masked as *****", c.Message)
	}
}

// TestHostilePath refuses a spec.path that leaves the artifact.
func TestHostilePath(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: " + ns + "}\n"})
	newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "escape", "src", func(k *kustomizev1.Kustomization) { k.Spec.Path = "../../" })
	c := waitFailed(t, k, meta.BuildFailedReason)
	if c.Message != "spec.path '../../' points outside the artifact" {
		t.Errorf("message %q", c.Message)
	}
}

// TestUnsupportedFieldsStall refuses each spec field the README lists as
// refused (and a source kind Eddy does not read) instead of silently
// applying without it: Ready=False and Stalled=True with the reason and
// message below, and nothing applied.
func TestUnsupportedFieldsStall(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: " + ns + "}\n"})
	newSource(t, ns, "src", r)
	for _, tc := range []struct {
		name, reason, message string
		mutate                func(*kustomizev1.Kustomization)
	}{
		{"workload-identity", meta.ReconciliationFailedReason, "spec.kubeConfig.configMapRef (workload identity) is not supported by Eddy yet; use spec.kubeConfig.secretRef", func(k *kustomizev1.Kustomization) {
			k.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "cluster"}}
		}},
		{"external-artifact-gate-off", kustomizev1.AccessDeniedReason, "can't access 'ExternalArtifact/" + ns + "/src', ExternalArtifact feature gate is disabled", func(k *kustomizev1.Kustomization) {
			k.Spec.SourceRef.Kind = "ExternalArtifact"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKustomization(t, ns, tc.name, "src", tc.mutate)
			waitFor(t, k, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.StalledCondition) })
			if c := readyCond(k); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("Ready %+v, want False %s %q", c, tc.reason, tc.message)
			}
			if apimeta.FindStatusCondition(k.Status.Conditions, meta.ReconcilingCondition) != nil {
				t.Error("Reconciling is set on a stalled Kustomization")
			}
		})
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "x"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("an object was applied by a refused Kustomization (%v)", err)
	}
}
