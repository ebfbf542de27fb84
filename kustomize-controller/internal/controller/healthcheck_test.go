package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestHealthChecksHoldNoWorker (issue #11): four Kustomizations (interval
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
