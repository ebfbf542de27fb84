package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryQuietNoOpReconcile runs the built binary: a periodic reconcile
// of an applied, Ready Kustomization whose revision did not change writes
// its status once (no Reconciling progress, Ready stays True), so the API
// server sees one status write per unchanged reconcile; a new revision
// still shows its progress (Ready=Unknown, Reconciling "Fetching
// manifests for revision …").
func TestBinaryQuietNoOpReconcile(t *testing.T) {
	ns := newNamespace(t)
	r := newRepo(t, map[string]string{"cm.yaml": configMapYAML(ns, "quiet")})
	src := newSource(t, ns, "quiet", r)
	k := newKustomization(t, ns, "quiet", "quiet", func(k *kustomizev1.Kustomization) {
		sharded(k)
		k.Spec.Interval = metav1.Duration{Duration: 2 * time.Second}
	})
	rev := "main@sha1:" + r.MustGit(t, "rev-parse", "HEAD")
	waitApplied(t, k, rev)

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := wc.Watch(ctx, &kustomizev1.KustomizationList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": k.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	total := func(k *kustomizev1.Kustomization) int64 {
		if len(k.Status.History) == 0 {
			return 0
		}
		return k.Status.History[0].TotalReconciliations
	}
	// next returns the next version of the Kustomization the watch shows.
	next := func() *kustomizev1.Kustomization {
		t.Helper()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified || ev.Type == watch.Added {
				return ev.Object.(*kustomizev1.Kustomization)
			}
		}
		t.Fatal("the watch ended before the Kustomization changed again")
		return nil
	}

	// The watch starts with the object as it is; then each write shows.
	first := next()
	start, writes := total(first), 0
	for got := first; total(got) < start+3; {
		got = next()
		writes++
		if ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); ready == nil || ready.Status != metav1.ConditionTrue {
			t.Fatalf("an unchanged reconcile wrote Ready %+v (want it True throughout)", ready)
		}
		if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition); c != nil {
			t.Fatalf("an unchanged reconcile wrote Reconciling %+v", c)
		}
		if got.Status.LastAppliedRevision != rev {
			t.Fatalf("lastAppliedRevision %q, want %q", got.Status.LastAppliedRevision, rev)
		}
		if d := total(got) - start; int64(writes) != d {
			t.Fatalf("%d writes of the Kustomization for %d unchanged reconciles, want one each", writes, d)
		}
	}

	// A new revision: its progress is written as Flux writes it.
	rev2 := push(t, r, src, map[string]string{"cm.yaml": configMapYAML(ns, "quiet2")}, "second")
	for {
		got := next()
		c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition)
		if c != nil && c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Message, "Fetching manifests for revision "+rev2) {
			if ready := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); ready == nil || ready.Status != metav1.ConditionUnknown {
				t.Errorf("while fetching a new revision, Ready is %+v, want Unknown", ready)
			}
			break
		}
	}
	waitApplied(t, k, rev2)
}
