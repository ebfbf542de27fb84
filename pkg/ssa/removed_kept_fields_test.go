package ssa_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A Namespace exported with its server-set label kubernetes.io/metadata.name
// (`kubectl get ns -o yaml`) loses the label in Git. The server sets it to
// the name whatever Git says, so the live Namespace is as Git says: nothing
// fails, and with force the Namespace is not deleted.
func TestNamespaceNameLabelRemovedIsNotKept(t *testing.T) {
	ctx := context.Background()
	name := namespace(t) + "-label"
	with := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {team: a, kubernetes.io/metadata.name: %s}}\n", name, name)
	without := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {team: a}}\n", name)
	apply(t, objects(t, with), ssa.ApplyOptions{})
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	before := get(t, "Namespace", "v1", "", name)
	if _, err := manager().ApplyAll(ctx, objects(t, without), ssa.ApplyOptions{}); err != nil {
		t.Errorf("without force: %v, want success", err)
	}
	if _, err := manager().ApplyAll(ctx, objects(t, without), ssa.ApplyOptions{Force: true}); err != nil {
		t.Errorf("with force: %v, want success", err)
	}
	after := get(t, "Namespace", "v1", "", name)
	if after.GetUID() != before.GetUID() || after.GetDeletionTimestamp() != nil {
		t.Errorf("the Namespace was deleted (uid %s → %s, deletionTimestamp %v)", before.GetUID(), after.GetUID(), after.GetDeletionTimestamp())
	}
	if after.GetLabels()["kubernetes.io/metadata.name"] != name {
		t.Errorf("labels %v, want the server's kubernetes.io/metadata.name", after.GetLabels())
	}
}

// In a namespace whose Service quota is full the dry-run create of a twin
// is refused: the headless Service whose `clusterIP: None` Git removed is
// still flagged (a known kept field), not reported applied.
func TestKeptFieldFlaggedWhenTwinRefused(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	apply(t, objects(t, dbService(ns, "clusterIP: None, ")), ssa.ApplyOptions{})
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"services": resource.MustParse("1")}}}
	if err := env.Client.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	// What the quota controller writes (the api profile runs none).
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{"services": resource.MustParse("1")}}
	if err := env.Client.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	_, err := manager().ApplyAll(ctx, objects(t, dbService(ns, "")), ssa.ApplyOptions{})
	want := "Service/" + ns + "/db dry-run failed: .spec.clusterIP removed from the desired state but kept by the API server; " +
		"the object must be recreated: enable force (spec.force or the kustomize.toolkit.fluxcd.io/force: enabled annotation)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if got := liveService(t, ns, "db").Spec.ClusterIP; got != "None" {
		t.Errorf("clusterIP %q, want None (nothing written)", got)
	}
}

func kubectlService(t *testing.T, ns, name, clusterIP string) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432}}}}
	if err := env.Client.Create(context.Background(), svc, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	return svc
}

// A Service made by `kubectl apply` and adopted from a Git copy without
// clusterIP: the server defaults it holds (type, sessionAffinity, port
// protocol...) are not listed as removed; a headless one needs force (the
// server would keep `clusterIP: None`), and with force it is replaced.
func TestAdoptedServiceRemovedAndKept(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	kubectlService(t, ns, "db", "")
	cs := apply(t, objects(t, dbService(ns, "")), ssa.ApplyOptions{})
	if len(cs) != 1 || cs[0].Action != ssa.Configured || len(cs[0].Removed) != 0 {
		t.Errorf("adoption: %v removed %q, want configured with nothing removed", cs, cs[0].Removed)
	}

	kubectlService(t, ns, "headless", "None")
	doc := strings.Replace(dbService(ns, ""), "name: db", "name: headless", 1)
	before := liveService(t, ns, "headless")
	_, err := manager().ApplyAll(ctx, objects(t, doc), ssa.ApplyOptions{})
	want := "Service/" + ns + "/headless dry-run failed: .spec.clusterIP removed from the desired state but kept by the API server; " +
		"the object must be recreated: enable force (spec.force or the kustomize.toolkit.fluxcd.io/force: enabled annotation)"
	if err == nil || err.Error() != want {
		t.Errorf("headless adoption without force: %v, want %s", err, want)
	}
	if got := liveService(t, ns, "headless"); got.ResourceVersion != before.ResourceVersion {
		t.Errorf("without force the Service was written")
	}
	cs, err = manager().ApplyAll(ctx, objects(t, doc), ssa.ApplyOptions{Force: true})
	if err != nil || len(cs) != 1 || cs[0].Action != ssa.Replaced {
		t.Fatalf("with force: %v %v, want replaced", cs, err)
	}
	if got := liveService(t, ns, "headless"); got.UID == before.UID || got.Spec.ClusterIP == "None" {
		t.Errorf("with force: clusterIP %q, uid unchanged %v; want a recreated Service with a cluster IP", got.Spec.ClusterIP, got.UID == before.UID)
	}
}

// List items removed from Git (an env var, a Service port, a container)
// are listed as removed, by their key, without values.
func TestRemovedListItemsAreListed(t *testing.T) {
	ns := namespace(t)
	dep := func(containers string) string {
		return deployment(ns, 1, containers)
	}
	svc := func(ports string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: %s}\nspec: {selector: {app: web}, ports: [%s]}\n", ns, ports)
	}
	oldDep := dep("{name: c, image: nginx, env: [{name: A, value: '1'}, {name: OLD, value: s3cr3t}]}, {name: sidecar, image: busybox}")
	apply(t, objects(t, oldDep, svc("{name: http, port: 80}, {name: metrics, port: 9090}")), ssa.ApplyOptions{})
	cs := apply(t, objects(t, dep("{name: c, image: nginx, env: [{name: A, value: '1'}]}"), svc("{name: http, port: 80}")), ssa.ApplyOptions{})
	want := map[string]string{
		"Deployment": ".spec.template.spec.containers[name=c].env[name=OLD],.spec.template.spec.containers[name=sidecar]",
		"Service":    ".spec.ports[port=9090,protocol=TCP]",
	}
	for _, c := range cs {
		if got := strings.Join(c.Removed, ","); c.Action != ssa.Configured || got != want[c.Meta.GroupKind.Kind] || len(c.Drift) != 0 {
			t.Errorf("%s removed %q drift %v, want configured with %q removed", c, got, c.Drift, want[c.Meta.GroupKind.Kind])
		}
	}
}

// A Namespace keeps `spec.finalizers` on update (only its finalize
// subresource changes them), so removing a finalizer from Git leaves it
// kept; a Namespace is never deleted and recreated for that, even with
// force, as that would delete everything in it.
func TestKeptFieldNeverRecreatesNamespace(t *testing.T) {
	ctx := context.Background()
	name := namespace(t) + "-fin"
	with := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\nspec: {finalizers: [example.com/hold]}\n", name)
	without := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", name)
	apply(t, objects(t, with), ssa.ApplyOptions{})
	before := get(t, "Namespace", "v1", "", name)
	want := "Namespace/" + name + " dry-run failed: .spec.finalizers removed from the desired state but kept by the API server; " +
		"a Namespace is not recreated: set the field in the desired state"
	for _, force := range []bool{false, true} {
		if _, err := manager().ApplyAll(ctx, objects(t, without), ssa.ApplyOptions{Force: force}); err == nil || err.Error() != want {
			t.Errorf("force %v: %v, want %s", force, err, want)
		}
	}
	after := get(t, "Namespace", "v1", "", name)
	if after.GetUID() != before.GetUID() || after.GetDeletionTimestamp() != nil {
		t.Errorf("the Namespace was deleted (uid %s → %s, deletionTimestamp %v)", before.GetUID(), after.GetUID(), after.GetDeletionTimestamp())
	}
}

// When Git removes every field the applier set, the API server drops its
// Apply entry: the fields are still listed as removed.
func TestRemovedAllFieldsAreListed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	with := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: all, namespace: %s}\ndata: {A: '1'}\n", ns)
	without := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: all, namespace: %s}\n", ns)
	apply(t, objects(t, with), ssa.ApplyOptions{})
	cs, err := manager().ApplyAll(ctx, objects(t, without), ssa.ApplyOptions{})
	if err != nil || len(cs) != 1 || cs[0].Action != ssa.Configured || strings.Join(cs[0].Removed, ",") != ".data.A" {
		t.Errorf("%v %v removed %q, want configured with .data.A removed", cs, err, cs[0].Removed)
	}
}
