package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// checkingHealth reports whether k is waiting for the health checks of
// rev: Ready=Unknown, Reconciling "Running health checks for revision rev
// ...". Flux compatible.
func checkingHealth(k *kustomizev1.Kustomization, rev string) bool {
	ready, rec := readyCond(k), apimeta.FindStatusCondition(k.Status.Conditions, meta.ReconcilingCondition)
	return ready != nil && ready.Status == metav1.ConditionUnknown && rec != nil && rec.Reason == meta.ProgressingReason &&
		strings.HasPrefix(rec.Message, "Running health checks for revision "+rev+" ")
}

// canceledEvent waits for the HealthCheckCanceled event of k and returns
// its message.
func canceledEvent(t *testing.T, k *kustomizev1.Kustomization) string {
	t.Helper()
	var evs []string
	waitFor(t, k, "a HealthCheckCanceled event", func() bool {
		evs = kubeEvents(t, k.Namespace, k.Name, meta.HealthCheckCanceledReason)
		return len(evs) > 0
	})
	return evs[0]
}

// TestHealthChecksHoldNoWorker: four Kustomizations (interval
// 1h, so a timeout of 59m30s) wait for Deployments whose pods can never be
// scheduled, as many as the controller has workers (--concurrent 4); a
// fifth, created after them, is still applied and becomes Ready while the
// four are still checking health. A new commit to the source of one of the
// four, and a new generation of another, cancel their waits
// (HealthCheckCanceled, Flux's event) and the new revision or generation
// is applied. Run by the built binary, and by the in-process reconciler
// (under the race detector with go test -race).
func TestHealthChecksHoldNoWorker(t *testing.T) {
	t.Run("binary", func(t *testing.T) { healthChecksHoldNoWorker(t, sharded) })
	t.Run("in-process", func(t *testing.T) { healthChecksHoldNoWorker(t, func(*kustomizev1.Kustomization) {}) })
}

func healthChecksHoldNoWorker(t *testing.T, shard func(*kustomizev1.Kustomization)) {
	ns := newNamespace(t)
	t.Cleanup(func() { deleteKustomizations(t, ns) })
	dep := func(name string, schedulable bool) string {
		extra := "\n      nodeSelector: {no-such-node: \"true\"}"
		if schedulable {
			extra = ""
		}
		return strings.ReplaceAll(deployment(ns, 1, extra), "payment-api", name)
	}
	shared := newRepo(t, map[string]string{
		"stuck-0/deployment.yaml": dep("stuck-0", false),
		"stuck-1/deployment.yaml": dep("stuck-1", false),
		"stuck-2/deployment.yaml": dep("stuck-2", false),
		"ready/deployment.yaml":   dep("ready", true),
	})
	sharedSrc := newSource(t, ns, "shared", shared)
	own := newRepo(t, map[string]string{"deployment.yaml": dep("stuck-3", false)})
	ownSrc := newSource(t, ns, "own", own)

	stuck := make([]*kustomizev1.Kustomization, 4)
	for i := range stuck {
		stuck[i] = newKustomization(t, ns, fmt.Sprintf("stuck-%d", i), sharedSrc.Name, func(k *kustomizev1.Kustomization) {
			shard(k)
			k.Spec.Path = fmt.Sprintf("./stuck-%d", i)
			k.Spec.Wait = true
			switch i {
			case 2: // spec.healthChecks instead of spec.wait
				k.Spec.Wait = false
				k.Spec.HealthChecks = []meta.NamespacedObjectKindReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "stuck-2", Namespace: ns}}
			case 3:
				k.Spec.SourceRef.Name, k.Spec.Path = ownSrc.Name, "./"
			}
		})
	}
	revs := []string{sharedSrc.Status.Artifact.Revision, sharedSrc.Status.Artifact.Revision, sharedSrc.Status.Artifact.Revision, ownSrc.Status.Artifact.Revision}
	for i, k := range stuck {
		waitFor(t, k, "Running health checks", func() bool { return checkingHealth(k, revs[i]) })
	}

	ready := newKustomization(t, ns, "ready", sharedSrc.Name, func(k *kustomizev1.Kustomization) {
		shard(k)
		k.Spec.Path = "./ready"
		k.Spec.Wait = true
	})
	waitApplied(t, ready, sharedSrc.Status.Artifact.Revision)
	for i, k := range stuck {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k); err != nil {
			t.Fatal(err)
		}
		if !checkingHealth(k, revs[i]) {
			t.Errorf("%s: once %s was Ready, conditions %+v; want it still running its health checks", k.Name, ready.Name, k.Status.Conditions)
		}
	}

	// A new commit to the source of stuck-3 makes its Deployment schedulable.
	rev := push(t, own, ownSrc, map[string]string{"deployment.yaml": dep("stuck-3", true)}, "schedulable")
	if got, want := canceledEvent(t, stuck[3]), fmt.Sprintf("Health checks canceled due to new reconciliation triggered by GitRepository/%s/%s", ns, ownSrc.Name); got != want {
		t.Errorf("HealthCheckCanceled event %q, want %q", got, want)
	}
	waitApplied(t, stuck[3], rev)

	// A new generation of stuck-2 checks the Deployment of ready instead.
	k := stuck[2]
	patch := client.MergeFrom(k.DeepCopy())
	k.Spec.HealthChecks[0].Name = "ready"
	if err := env.Client.Patch(context.Background(), k, patch); err != nil {
		t.Fatal(err)
	}
	if got, want := canceledEvent(t, k), fmt.Sprintf("Health checks canceled due to new reconciliation triggered by Kustomization/%s/%s", ns, k.Name); got != want {
		t.Errorf("HealthCheckCanceled event %q, want %q", got, want)
	}
	waitApplied(t, k, revs[2])
	for _, k := range stuck[:2] {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(k), k); err != nil || !checkingHealth(k, revs[0]) {
			t.Errorf("%s: conditions %+v (%v); want it still running its health checks", k.Name, k.Status.Conditions, err)
		}
	}
}

// TestCancelHealthCheckOnNewRevisionGate: the decision of a reconcile that
// finds its Kustomization's health checks running for an older generation.
// With the gate on (Eddy's default) the wait is canceled with Flux's
// HealthCheckCanceled event and failure. With
// --feature-gates=CancelHealthCheckOnNewRevision=false it goes on
// (healthPending, no event), and once it is decided the new generation is
// reconciled in full (resumed false).
func TestCancelHealthCheckOnNewRevisionGate(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%t", keep), func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			r := &KustomizationReconciler{KeepHealthCheckOnNewRevision: keep, healthChecks: newHealthChecks(),
				Events: events.NewRecorder(rec, nil, "", ControllerName, logr.Discard())}
			waitCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &healthWait{key: types.NamespacedName{Namespace: "ns", Name: "k"}, generation: 1, cancel: cancel, detached: true}
			r.healthChecks.waits[w.key] = w
			obj := &kustomizev1.Kustomization{}
			obj.Namespace, obj.Name, obj.Generation = "ns", "k", 2
			resume := func() (*failure, bool) {
				var start time.Time
				return r.resumeHealthCheck(context.Background(), obj, &snapshot{}, &start)
			}

			f, resumed := resume()
			if !keep {
				if !resumed || f == nil || f.Reason != meta.HealthCheckCanceledReason || f.Message != "New reconciliation triggered by Kustomization/ns/k" {
					t.Fatalf("got %+v, %t; want HealthCheckCanceled", f, resumed)
				}
				if waitCtx.Err() == nil || r.healthChecks.waits[w.key] != nil {
					t.Errorf("the wait was not canceled and forgotten")
				}
				if got, want := <-rec.Events, "Normal HealthCheckCanceled Health checks canceled due to new reconciliation triggered by Kustomization/ns/k"; got != want {
					t.Errorf("event %q, want %q", got, want)
				}
				return
			}
			if f != healthPending || !resumed || waitCtx.Err() != nil || r.healthChecks.waits[w.key] != w || len(rec.Events) > 0 {
				t.Fatalf("got %+v, %t (canceled %v, %d events); want the wait going on", f, resumed, waitCtx.Err(), len(rec.Events))
			}
			w.decided = true
			if f, resumed := resume(); f != nil || resumed || r.healthChecks.waits[w.key] != nil {
				t.Errorf("once decided: got %+v, %t; want the new generation reconciled in full", f, resumed)
			}
		})
	}
}
