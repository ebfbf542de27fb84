package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Conditions returns obj's status.conditions, read through its unstructured
// form so that it works for any kind (typed or unstructured); ok is false
// when obj has none.
func Conditions(obj runtime.Object) (conds []metav1.Condition, ok bool) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, false
	}
	raw, found, err := unstructured.NestedSlice(u, "status", "conditions")
	if err != nil || !found || len(raw) == 0 {
		return nil, false
	}
	b, err := json.Marshal(raw)
	if err != nil || json.Unmarshal(b, &conds) != nil {
		return nil, false
	}
	return conds, true
}

// StatusViolations returns the ways a status breaks the conventions of
// Flux's controllers that kstatus, `flux` and `kubectl wait` read (kstatus
// "abnormal-true" conditions, fluxcd/pkg/runtime's summarize helper), empty
// when none. conds are status.conditions, generation is
// metadata.generation, observed is status.observedGeneration:
//   - Reconciling and Stalled are present only with status True;
//   - Ready=True goes with neither Reconciling nor Stalled;
//   - no condition observes a generation beyond metadata.generation;
//   - once status.observedGeneration is the generation, so is Ready's
//     (`kubectl wait` compares the condition's).
//
// These hold in every state a controller writes, mid-reconcile included.
func StatusViolations(conds []metav1.Condition, generation, observed int64) []string {
	var out []string
	for _, typ := range []string{meta.ReconcilingCondition, meta.StalledCondition} {
		if c := apimeta.FindStatusCondition(conds, typ); c != nil && c.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s is %s (%s), want it True or absent", typ, c.Status, c.Reason))
		}
	}
	ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionTrue {
		for _, typ := range []string{meta.ReconcilingCondition, meta.StalledCondition} {
			if c := apimeta.FindStatusCondition(conds, typ); c != nil {
				out = append(out, fmt.Sprintf("Ready=True with %s (%s %q)", typ, c.Reason, c.Message))
			}
		}
	}
	for _, c := range conds {
		if c.ObservedGeneration > generation {
			out = append(out, fmt.Sprintf("%s observedGeneration %d beyond generation %d", c.Type, c.ObservedGeneration, generation))
		}
	}
	if ready != nil && observed == generation && ready.ObservedGeneration != generation {
		out = append(out, fmt.Sprintf("status.observedGeneration is %d but Ready's is %d", generation, ready.ObservedGeneration))
	}
	return out
}

// observedGeneration reads status.observedGeneration of any kind through
// its unstructured form; 0 when absent.
func observedGeneration(obj runtime.Object) int64 {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return 0
	}
	g, _, _ := unstructured.NestedInt64(u, "status", "observedGeneration")
	return g
}

// CheckStatus fails t for each StatusViolations of obj (any kind with
// status.conditions; an object without them passes).
func CheckStatus(t testing.TB, obj client.Object) {
	t.Helper()
	conds, _ := Conditions(obj)
	for _, v := range StatusViolations(conds, obj.GetGeneration(), observedGeneration(obj)) {
		t.Errorf("%T %s/%s: status: %s", obj, obj.GetNamespace(), obj.GetName(), v)
	}
}

// CheckSettledStatus reads obj (its kind from c's scheme) until its Ready
// condition is final, True or False, for metadata.generation, or Unknown
// for it while Reconciling is True (a reconcile that legitimately goes on,
// such as a health check waiting up to its timeout), up to WaitTimeout/2,
// and returns the ways it breaks the conventions: Ready's
// observedGeneration never reaching the generation, and StatusViolations
// on the state reached. An object that is gone, being deleted or suspended
// (spec.suspend) is not checked.
func CheckSettledStatus(c client.Client, obj client.Object) []string {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return []string{err.Error()}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	var getErr error
	var ready *metav1.Condition
	var conds []metav1.Condition
	pollErr := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, WaitTimeout/2, true,
		func(ctx context.Context) (bool, error) {
			if getErr = c.Get(ctx, client.ObjectKeyFromObject(obj), u); getErr != nil {
				return apierrors.IsNotFound(getErr), nil
			}
			if suspended, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); suspended || u.GetDeletionTimestamp() != nil {
				return true, nil
			}
			conds, _ = Conditions(u)
			ready = apimeta.FindStatusCondition(conds, meta.ReadyCondition)
			inProgress := ready != nil && ready.Status == metav1.ConditionUnknown &&
				apimeta.IsStatusConditionTrue(conds, meta.ReconcilingCondition)
			return ready != nil && (ready.Status != metav1.ConditionUnknown || inProgress) && ready.ObservedGeneration == u.GetGeneration(), nil
		})
	switch {
	case getErr != nil && apierrors.IsNotFound(getErr):
		return nil
	case pollErr != nil && ready == nil:
		return []string{fmt.Sprintf("no Ready condition after %s (read error: %v)", WaitTimeout/2, getErr)}
	case pollErr != nil:
		return []string{fmt.Sprintf("Ready %s (%s) has observedGeneration %d after %s, metadata.generation is %d",
			ready.Status, ready.Reason, ready.ObservedGeneration, WaitTimeout/2, u.GetGeneration())}
	case ready == nil: // suspended or being deleted
		return nil
	}
	return StatusViolations(conds, u.GetGeneration(), observedGeneration(u))
}

// settledChecks remembers, per test, the objects already to be checked at
// its end.
var settledChecks sync.Map // testing.TB → *sync.Map of "<gvk> <ns>/<name>" → true

// checkSettledOnCleanup has CheckSettledStatus run on obj when t ends
// (once per object and test), before the cleanups registered earlier, such
// as stopping the controllers the test started.
func checkSettledOnCleanup(t testing.TB, c client.Client, obj client.Object) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return
	}
	seen, loaded := settledChecks.LoadOrStore(t, &sync.Map{})
	if !loaded {
		t.Cleanup(func() { settledChecks.Delete(t) })
	}
	key := gvk.String() + " " + client.ObjectKeyFromObject(obj).String()
	if _, dup := seen.(*sync.Map).LoadOrStore(key, true); dup {
		return
	}
	check := obj.DeepCopyObject().(client.Object)
	t.Cleanup(func() {
		if t.Failed() || t.Skipped() {
			return // a failed test has said what went wrong
		}
		for _, v := range CheckSettledStatus(c, check) {
			t.Errorf("%s: status conformance at the end of the test: %s", key, v)
		}
	})
}

// ClusterStatusViolations checks every Kustomization, GitRepository,
// HelmRepository, HelmChart, OCIRepository, HelmRelease and Receiver in the cluster
// (StatusViolations), one line per violation naming the object. Main runs
// it after the tests, so each controller scenario's objects are checked as
// the scenario left them.
func ClusterStatusViolations(ctx context.Context, c client.Reader) ([]string, error) {
	var objs []client.Object
	lists := []client.ObjectList{
		&kustomizev1.KustomizationList{},
		&sourcev1.GitRepositoryList{},
		&sourcev1.HelmRepositoryList{},
		&sourcev1.HelmChartList{},
		&sourcev1.OCIRepositoryList{},
		&helmv2.HelmReleaseList{},
		&notificationv1.ReceiverList{},
	}
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			objs = append(objs, item.(client.Object))
		}
	}
	var out []string
	for _, o := range objs {
		conds, _ := Conditions(o)
		for _, v := range StatusViolations(conds, o.GetGeneration(), observedGeneration(o)) {
			out = append(out, fmt.Sprintf("%T %s/%s: %s", o, o.GetNamespace(), o.GetName(), v))
		}
	}
	return out, nil
}
