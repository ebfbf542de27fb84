package testenv

import (
	"context"
	"fmt"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusObject is an object whose status has conditions and
// observedGeneration: Eddy's Kustomization, GitRepository and Receiver.
type StatusObject interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
}

// StatusViolations lists where obj's status breaks the conventions kstatus,
// `flux` and `kubectl wait` read (Flux's runtime/conditions): Reconciling
// and Stalled are abnormal-true (present only as True, never both); no
// Reconciling once Ready=True; no condition observes a generation beyond
// metadata.generation; once status.observedGeneration is the generation,
// so is Ready's. Empty when it conforms.
func StatusViolations(obj StatusObject) []string {
	var out []string
	conds, gen := obj.GetConditions(), obj.GetGeneration()
	for _, typ := range []string{meta.ReconcilingCondition, meta.StalledCondition} {
		if c := apimeta.FindStatusCondition(conds, typ); c != nil && c.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s=%s (abnormal-true: present only as True)", typ, c.Status))
		}
	}
	if apimeta.IsStatusConditionTrue(conds, meta.ReconcilingCondition) && apimeta.IsStatusConditionTrue(conds, meta.StalledCondition) {
		out = append(out, "Reconciling and Stalled both True")
	}
	if apimeta.IsStatusConditionTrue(conds, meta.ReadyCondition) && apimeta.FindStatusCondition(conds, meta.ReconcilingCondition) != nil {
		out = append(out, "Reconciling present while Ready=True")
	}
	for _, c := range conds {
		if c.ObservedGeneration > gen {
			out = append(out, fmt.Sprintf("%s observedGeneration %d beyond generation %d", c.Type, c.ObservedGeneration, gen))
		}
	}
	if ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition); ready != nil &&
		obj.GetObservedGeneration() == gen && ready.ObservedGeneration != gen {
		out = append(out, fmt.Sprintf("status.observedGeneration is %d but Ready's is %d", gen, ready.ObservedGeneration))
	}
	return out
}

// CheckStatus fails t for each StatusViolations of obj.
func CheckStatus(t testing.TB, obj StatusObject) {
	t.Helper()
	for _, v := range StatusViolations(obj) {
		t.Errorf("%T %s/%s: status: %s", obj, obj.GetNamespace(), obj.GetName(), v)
	}
}

// ClusterStatusViolations checks every Kustomization, GitRepository and
// Receiver in the cluster (StatusViolations), one line per violation
// naming the object. Main runs it after the tests, so each controller
// scenario's objects are checked as the scenario left them.
func ClusterStatusViolations(ctx context.Context, c client.Reader) ([]string, error) {
	var objs []StatusObject
	ks := &kustomizev1.KustomizationList{}
	gs := &sourcev1.GitRepositoryList{}
	rs := &notificationv1.ReceiverList{}
	for _, l := range []client.ObjectList{ks, gs, rs} {
		if err := c.List(ctx, l); err != nil {
			return nil, err
		}
	}
	for i := range ks.Items {
		objs = append(objs, &ks.Items[i])
	}
	for i := range gs.Items {
		objs = append(objs, &gs.Items[i])
	}
	for i := range rs.Items {
		objs = append(objs, &rs.Items[i])
	}
	var out []string
	for _, o := range objs {
		for _, v := range StatusViolations(o) {
			out = append(out, fmt.Sprintf("%T %s/%s: %s", o, o.GetNamespace(), o.GetName(), v))
		}
	}
	return out, nil
}
