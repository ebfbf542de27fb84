package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitGone waits up to 30s for obj to be deleted; it reports whether it was.
func waitGone(t *testing.T, obj client.Object) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// newTenantKustomization makes a namespace whose ServiceAccount "deployer"
// is bound to admin there, and the Kustomization "tenant" that applies the
// ConfigMap "tenant" as that account; it returns once it is applied.
func newTenantKustomization(t *testing.T) (string, *corev1.ServiceAccount, *rbacv1.RoleBinding, *kustomizev1.Kustomization) {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tenant, namespace: " + ns + "}\ndata: {a: b}\n"})
	src := newSource(t, ns, "src", r)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	for _, o := range []client.Object{sa, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	k := newKustomization(t, ns, "tenant", "src", func(k *kustomizev1.Kustomization) { k.Spec.ServiceAccountName = "deployer" })
	waitApplied(t, k, src.Status.Artifact.Revision)
	return ns, sa, binding, k
}

// A tenant's Kustomization deleted after its ServiceAccount (a namespace
// teardown) skips pruning with a warning and is released, as in Flux.
func TestDeleteAfterServiceAccountGone(t *testing.T) {
	ctx := context.Background()
	ns, sa, binding, k := newTenantKustomization(t)
	for _, o := range []client.Object{binding, sa, k} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if !waitGone(t, k) {
		t.Fatalf("Kustomization kept after its ServiceAccount was deleted (finalizers %v)", k.Finalizers)
	}
	want := "Skipping pruning: ServiceAccount '" + ns + "/deployer' not found; the objects of the inventory are left in place"
	if evs := kubeEvents(t, ns, "tenant", meta.PruneFailedReason); len(evs) != 1 || evs[0] != want {
		t.Errorf("events %q, want %q", evs, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap should be left in place: %v", err)
	}
}

// deletionPolicy WaitForTermination keeps the Kustomization while its
// objects terminate, for spec.timeout (30s, the least Flux allows) at
// most: then, as Flux, a PruneFailed event names what is still
// terminating and the Kustomization is released, so its namespace can go.
func TestWaitForTermination(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: " + ns + ", finalizers: [example.com/hold]}\ndata: {a: b}\n"})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "wft", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.DeletionPolicy = kustomizev1.DeletionPolicyWaitForTermination
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
	})
	waitApplied(t, k, src.Status.Artifact.Revision)
	start := time.Now()
	if err := env.Client.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns}}
	waitFor(t, cm, "held terminating", func() bool { return cm.DeletionTimestamp != nil })
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(k), k); err != nil {
		t.Fatalf("the Kustomization was released while its ConfigMap is terminating: %v", err)
	}
	testenv.WaitGone(t, env.Client, k, "the Kustomization released after its timeout")
	if took := time.Since(start); took < 25*time.Second {
		t.Errorf("released after %s, before the 30s timeout", took.Round(time.Second))
	}
	var named bool
	for _, msg := range kubeEvents(t, ns, k.Name, meta.PruneFailedReason) {
		named = named || strings.Contains(msg, "ConfigMap/"+ns+"/held")
	}
	if !named {
		t.Errorf("no PruneFailed event names the held ConfigMap: %q", kubeEvents(t, ns, k.Name, meta.PruneFailedReason))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	cm.Finalizers = nil
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
}

// A Kustomization that applies itself (the bootstrap pattern) with wait:
// true leaves itself out of its health checks.
func TestSelfHealthCheck(t *testing.T) {
	ns := newNamespace(t)
	self := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: self, namespace: " + ns + "}\n" +
		"spec: {interval: 1h, prune: true, wait: true, timeout: 30s, sourceRef: {kind: GitRepository, name: src}}\n"
	r := newRepo(t, map[string]string{"self.yaml": self, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: " + ns + "}\n"})
	src := newSource(t, ns, "src", r)
	k := newKustomization(t, ns, "self", "src", func(k *kustomizev1.Kustomization) {
		k.Spec.Wait = true
		k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second}
	})
	waitApplied(t, k, src.Status.Artifact.Revision)
}

// A tenant's Kustomization whose account lost its rights (its RoleBinding
// deleted first, as a namespace teardown may) is released with a warning
// naming the objects the account may no longer delete, instead of
// retrying the refused deletion for ever.
func TestDeleteAfterAccountLostRights(t *testing.T) {
	ctx := context.Background()
	ns, _, binding, k := newTenantKustomization(t)
	for _, o := range []client.Object{binding, k} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if !waitGone(t, k) {
		t.Fatalf("Kustomization kept after its account lost its rights (finalizers %v)", k.Finalizers)
	}
	want := "Skipping pruning: the deletion was refused; 1 object of the inventory left in place: ConfigMap/" + ns + "/tenant (forbidden)"
	if evs := kubeEvents(t, ns, "tenant", meta.PruneFailedReason); len(evs) != 1 || evs[0] != want {
		t.Errorf("events %q, want %q", evs, want)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap should be left in place: %v", err)
	}
}
