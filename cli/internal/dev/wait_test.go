package dev

import (
	"bytes"
	"context"
	"errors"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A List that fails is tried again after the poll interval (500ms), not at
// once: within a 1s wait there are at most three tries (at 0, 0.5 and 1s;
// fewer on a slow machine), where a loop without the pause makes thousands.
func TestWaitSyncedPausesAfterAFailedList(t *testing.T) {
	var lists atomic.Int32
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			if _, waiting := ctx.Deadline(); waiting { // not the final table's List
				lists.Add(1)
			}
			return errors.New("the API server is unavailable")
		},
	}).Build()
	var out bytes.Buffer
	err := waitSynced(t.Context(), c, ui.New(&out), time.Second)
	if err == nil || !strings.Contains(err.Error(), "not all Kustomizations settled within 1s") {
		t.Errorf("waitSynced: %v; want it to time out", err)
	}
	if n := lists.Load(); n < 1 || n > 3 {
		t.Errorf("%d Lists within the 1s wait; want 1 to 3, one each 500ms", n)
	}
}

// A Kustomization waiting for a dependency has settled while that
// dependency is not Ready, and not once it is (it is retried then).
func TestSettledDependencyNotReady(t *testing.T) {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system", Generation: 1}}
	k.Spec.DependsOn = []meta.DependencyReference{{Name: "infra"}, {Name: "crds", Namespace: "other"}}
	k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: meta.DependencyNotReadyReason, ObservedGeneration: 1}}
	for _, tc := range []struct {
		ready map[string]bool
		want  bool
	}{
		{map[string]bool{}, true},
		{map[string]bool{"flux-system/infra": true}, true},
		{map[string]bool{"flux-system/infra": true, "other/crds": false}, true},
		{map[string]bool{"flux-system/infra": true, "other/crds": true}, false},
	} {
		if got := settled(k, tc.ready); got != tc.want {
			t.Errorf("dependencies Ready %v: settled = %v, want %v", tc.ready, got, tc.want)
		}
	}
	k.Status.Conditions[0].Status, k.Status.Conditions[0].Reason = metav1.ConditionTrue, meta.ReconciliationSucceededReason
	k.Status.LastAttemptedRevision = "main@sha1:0123"
	if !settled(k, map[string]bool{}) {
		t.Error("a Ready Kustomization has not settled")
	}
}

// A dependency counts as Ready only when its Ready=True condition speaks of
// its current generation, as kustomize-controller requires.
func TestReadyNowWantsTheCurrentGeneration(t *testing.T) {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "infra", Namespace: "flux-system", Generation: 2}}
	k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason, ObservedGeneration: 1}}
	if readyNow(k) {
		t.Error("Ready=True of generation 1 counts as Ready at generation 2")
	}
	k.Status.Conditions[0].ObservedGeneration = 2
	if !readyNow(k) {
		t.Error("Ready=True of the current generation does not count as Ready")
	}
}
