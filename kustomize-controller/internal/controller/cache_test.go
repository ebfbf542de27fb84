package controller

import (
	"context"
	"flag"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCacheDropsManagedFields: the manager's informer cache (pkg/controllerkit's
// NewManager, as the binary builds it) keeps the Kustomizations without their
// managedFields, which the API server has; the reconciler reads them from
// that cache. A Kustomization of a shard of its own, suspended.
func TestCacheDropsManagedFields(t *testing.T) {
	ctx := context.Background()
	const shard = "cache-test"
	mgr := startManager(t, shard)

	ns := newNamespace(t)
	k := newKustomization(t, ns, "cached", "none", func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.Suspend = true
	})
	if len(k.ManagedFields) == 0 {
		t.Fatal("the API server returned no managedFields: nothing to check")
	}
	cached := &kustomizev1.Kustomization{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(k), cached) == nil, nil
	})
	if err != nil {
		t.Fatalf("Kustomization not in the cache after 30s: %v", err)
	}
	if len(cached.ManagedFields) != 0 {
		t.Errorf("cached Kustomization has %d managedFields entries, want none", len(cached.ManagedFields))
	}
	if cached.Spec.Suspend != true || cached.Labels[shardKey] != shard {
		t.Errorf("cached Kustomization lost its spec or labels: %+v", cached.ObjectMeta)
	}
}

// TestEventsThrottledPerReason: the manager's event recorder (as the binary
// builds it) throttles each reason of an object on its own: after more
// events of one reason than client-go lets through per object (25), a
// DriftCorrected event still reaches the API server.
func TestEventsThrottledPerReason(t *testing.T) {
	ctx := context.Background()
	mgr := startManager(t, "events-test")

	ns := newNamespace(t)
	k := newKustomization(t, ns, "noisy", "none", func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true })
	rec := mgr.GetEventRecorderFor("events-test")
	for i := range 40 {
		rec.Eventf(k, corev1.EventTypeNormal, "Progressing", "step %d", i)
	}
	rec.Event(k, corev1.EventTypeNormal, "DriftCorrected", "ConfigMap/"+ns+"/c drifted: .data.a \"1\" → \"2\" (by kubectl-edit); corrected")
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == "DriftCorrected" && e.InvolvedObject.Name == "noisy" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the DriftCorrected event after 40 Progressing ones did not reach the API server in 30s: %v", err)
	}
}

// startManager starts the binary's manager (pkg/controllerkit's NewManager from
// the binary's flags) without the reconciler, for the Kustomizations of
// shard (one manager per process may run the controller, and the suite's
// does), until the test ends.
func startManager(t *testing.T, shard string) ctrl.Manager {
	t.Helper()
	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--metrics-addr=0", "--health-addr=0", "--watch-label-selector=" + shardKey + "=" + shard}); err != nil {
		t.Fatal(err)
	}
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := c.Options.NewManager(ControllerName, env.Config, scheme, &kustomizev1.Kustomization{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return mgr
}
