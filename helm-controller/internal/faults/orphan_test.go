package faults

import (
	"context"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/faultpoint"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKillBetweenApplyAndInventoryLeavesNoOrphan: kustomize-controller
// exits at its fault point after applying a commit that adds an object and
// before writing the inventory; the next commit removes the object, and
// the restarted controller prunes it. Before the inventory named what was
// about to be applied, the object stayed forever.
func TestKillBetweenApplyAndInventoryLeavesNoOrphan(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	dir := t.TempDir()
	kc, err := newController(env, dir, "kustomize-controller", kustomizeArgs...)
	if err != nil {
		t.Fatal(err)
	}
	kc.logOnFailure(t)
	t.Cleanup(kc.stop)
	r := gitSrv.NewRepo(t, map[string]string{"app/a.yaml": configMap("a"), "app/b.yaml": configMap("b"),
		"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n"})
	src := newSource(t, ns, "repo", r.URL(), time.Hour)
	rev1 := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	artifactAt(t, src, rev1)
	k := newKustomization(t, ns, "app", "repo", "./app", time.Hour)
	if err := kc.start(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, time.Minute, "Ready at "+rev1, func() bool { return readyAt(k, rev1) })
	kc.stop()

	// A commit adds c; the controller dies after applying it.
	rev2 := "main@sha1:" + r.MustCommit(t, map[string]string{"app/c.yaml": configMap("c"),
		"app/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n"}, "add c")
	artifactAt(t, src, rev2)
	if err := kc.start(false, faultpoint.EnvVar+"="+faultpoint.KustomizeAfterApply); err != nil {
		t.Fatal(err)
	}
	code, err := kc.waitExit(time.Minute)
	if err != nil || code != faultpoint.ExitCode {
		t.Fatalf("kustomize-controller ended with code %d (%v), want the fault point's %d", code, err, faultpoint.ExitCode)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("ConfigMap c was not applied before the fault point: %v", err)
	}

	// The next commit removes c; the restarted controller prunes it.
	rev3 := "main@sha1:" + r.MustCommit(t, map[string]string{"app/c.yaml": "",
		"app/kustomization.yaml": "resources: [a.yaml, b.yaml]\n"}, "remove c")
	artifactAt(t, src, rev3)
	if err := kc.start(true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, time.Minute, "Ready at "+rev3, func() bool { return readyAt(k, rev3) })
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap c, applied before the kill and removed from Git, is still there (err %v)", err)
	}
	var ids []string
	for _, e := range k.Status.Inventory.Entries {
		ids = append(ids, e.ID)
	}
	want := []string{ns + "_a__ConfigMap", ns + "_b__ConfigMap"}
	if len(ids) != 2 || ids[0] != want[0] || ids[1] != want[1] {
		t.Errorf("inventory %v, want %v", ids, want)
	}
}
