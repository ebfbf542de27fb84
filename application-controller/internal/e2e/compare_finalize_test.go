package e2e

import (
	"context"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// wavedConfigMaps: w0 in wave 0, w1 in wave 1 held by a finalizer of
// the test's, so the test decides when wave 1 is gone.
var wavedConfigMaps = map[string]string{
	"app/w0.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w0\ndata:\n  k: v\n",
	"app/w1.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w1\n  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\n  finalizers: [example.com/hold]\ndata:\n  k: v\n",
}

// TestCompareResourcesFinalizerDeletesWaveByWave: an Application with
// resources-finalizer.argocd.argoproj.io, deleted, deletes its wave 1
// object first and its wave 0 object only once wave 1 is gone; the
// namespace CreateNamespace made stays (argocd-contract §1.12).
func TestCompareResourcesFinalizerDeletesWaveByWave(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, wavedConfigMaps)
	ns := uniqueName("finalizer")
	app := exampleApp(uniqueName("finalizer"), repo.URL(), "app", ns, nil)
	app.Finalizers = []string{argov1.FinalizerResources}
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := env.Client.Delete(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	// The order as the API server tells it: w1 marked for deletion,
	// released by the test, gone; only then w0 marked or gone.
	w1Gone, released := false, false
	for ev := range w.ResultChan() {
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		deleting := ev.Type == watch.Deleted || cm.DeletionTimestamp != nil
		switch {
		case cm.Name == "w0" && deleting && !w1Gone:
			t.Fatalf("w0 (wave 0) is being deleted while w1 (wave 1) still exists")
		case cm.Name == "w0" && ev.Type == watch.Deleted:
			goto done
		case cm.Name == "w1" && ev.Type == watch.Deleted:
			w1Gone = true
		case cm.Name == "w1" && deleting && !released:
			released = true
			if err := env.Client.Patch(t.Context(), cm, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatal("the watch ended before w0 was deleted")
done:
	waitGone(t, app)
	nsObj := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil || nsObj.DeletionTimestamp != nil {
		t.Errorf("the namespace CreateNamespace made was deleted (err %v)", err)
	}
}

// waitGone waits until app no longer exists.
func waitGone(t *testing.T, app *argov1.Application) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, appTimeout, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), &argov1.Application{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s/%s still exists after %s", app.Namespace, app.Name, appTimeout)
	}
}

// TestCompareDeletionWithoutFinalizerOrphansObjects: an Application
// without a resources finalizer, deleted, leaves its objects as they
// are (argocd-contract §1.12).
func TestCompareDeletionWithoutFinalizerOrphansObjects(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, twoConfigMaps)
	ns := uniqueName("orphan")
	app := exampleApp(uniqueName("orphan"), repo.URL(), "app", ns, nil)
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
	if err := env.Client.Delete(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	waitGone(t, app)
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil || cm.DeletionTimestamp != nil {
			t.Errorf("%s was deleted with an Application without the resources finalizer (err %v)", name, err)
		}
	}
}
