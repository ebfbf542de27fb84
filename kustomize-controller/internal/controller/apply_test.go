package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func service(ns, name, clusterIP string, annotations string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %s
  namespace: %s
  annotations: {%s}
spec:
  clusterIP: %s
  ports: [{port: 80}]
`, name, ns, annotations, clusterIP)
}

func clusterIP(t *testing.T, ns, name string) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// TestImmutableFieldNeedsForce changes the immutable clusterIP of two
// Services, one annotated `force: enabled`: without spec.force the set
// fails on the other and neither changes; with spec.force both are
// recreated.
func TestImmutableFieldNeedsForce(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{
		"a.yaml": service(ns, "svc-a", "10.96.200.10", ""),
		"b.yaml": service(ns, "svc-b", "10.96.200.20", "kustomize.toolkit.fluxcd.io/force: enabled"),
	})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "svc", "src", nil)
	waitApplied(t, k, src.Status.Artifact.Revision)

	rev := push(t, r, src, map[string]string{
		"a.yaml": service(ns, "svc-a", "10.96.200.11", ""),
		"b.yaml": service(ns, "svc-b", "10.96.200.21", "kustomize.toolkit.fluxcd.io/force: enabled"),
	}, "move the cluster IPs")
	c := waitFailed(t, k, meta.ReconciliationFailedReason)
	if k.Status.LastAttemptedRevision != rev || !strings.Contains(c.Message, "Service/"+ns+"/svc-a dry-run failed") ||
		!strings.Contains(c.Message, "may not change once set") || strings.Contains(c.Message, "svc-b") {
		t.Errorf("without force: %q", c.Message)
	}
	if a, b := clusterIP(t, ns, "svc-a"), clusterIP(t, ns, "svc-b"); a != "10.96.200.10" || b != "10.96.200.20" {
		t.Errorf("a failed set changed objects: clusterIPs %s %s", a, b)
	}

	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.Force = true
	if err := env.Client.Patch(ctx, k, patch); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, k, rev)
	if a, b := clusterIP(t, ns, "svc-a"), clusterIP(t, ns, "svc-b"); a != "10.96.200.11" || b != "10.96.200.21" {
		t.Errorf("with force: clusterIPs %s %s, want both recreated", a, b)
	}
}

// TestServiceAccountImpersonation applies as spec.serviceAccountName: without
// RBAC the apply is refused naming the account; with a Role it succeeds.
func TestServiceAccountImpersonation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tenant, namespace: " + ns + "}\ndata: {a: b}\n"})
	src := newSource(t, ns, "src", r)
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	k := newKustomization(t, ns, "tenant", "src", func(k *kustomizev1.Kustomization) { k.Spec.ServiceAccountName = "deployer" })
	c := waitFailed(t, k, meta.ReconciliationFailedReason)
	if !strings.Contains(c.Message, "system:serviceaccount:"+ns+":deployer") || !strings.Contains(c.Message, "ConfigMap/"+ns+"/tenant") {
		t.Errorf("message %q does not name the account and the object", c.Message)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("applied despite missing RBAC: %v", err)
	}

	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch", "update", "delete"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
	waitApplied(t, k, src.Status.Artifact.Revision)
}

// TestIgnoreRules leaves a field that another applier owns alone when
// spec.ignore names it, and stalls on an invalid target expression.
func TestIgnoreRules(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cm := func(level string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tuned, namespace: " + ns + "}\ndata: {level: \"" + level + "\"}\n"
	}
	r := newRepo(t, map[string]string{"cm.yaml": cm("1")})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "tuned", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/data/level"}, Target: &kustomizev1.Selector{Kind: "ConfigMap", Name: "tun.*"}}}
	})
	waitApplied(t, k, src.Status.Artifact.Revision)
	other := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "tuned", Namespace: ns}, Data: map[string]string{"level": "7"}}
	if err := env.Client.Patch(ctx, other, client.Apply, client.FieldOwner("autotuner"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	requestReconcile(t, k, func() string { return k.Status.LastHandledReconcileAt })
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tuned"}, got); err != nil || got.Data["level"] != "7" {
		t.Errorf("ignored field reset: %v (%v)", got.Data, err)
	}
	if evs := kubeEvents(t, ns, "tuned", "DriftCorrected"); len(evs) != 0 {
		t.Errorf("drift reported for an ignored field: %q", evs)
	}

	bad := newKustomization(t, ns, "bad", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/data"}, Target: &kustomizev1.Selector{Name: "(("}}}
	})
	waitFor(t, bad, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(bad.Status.Conditions, meta.StalledCondition) })
	if c := readyCond(bad); !strings.Contains(c.Message, `spec.ignore[0].target: name: invalid regular expression "(("`) {
		t.Errorf("message %q", c.Message)
	}
}
