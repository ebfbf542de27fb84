package kinds

import (
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mustKind(t *testing.T, kind string) Kind {
	t.Helper()
	k, ok := ByKind(kind)
	if !ok {
		t.Fatalf("kind %s not in the table", kind)
	}
	return k
}

// TestReadyAsFlux: flux's readiness of created and resumed objects.
func TestReadyAsFlux(t *testing.T) {
	ks := func(gen, observed, condGen int64, status metav1.ConditionStatus, reason string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: "flux-system", Generation: gen}}
		k.Status.ObservedGeneration = observed
		if status != "" {
			k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: status, Reason: reason,
				Message: "m", ObservedGeneration: condGen}}
		}
		return k
	}
	stalled := func(k *kustomizev1.Kustomization) *kustomizev1.Kustomization {
		k.Status.Conditions = append(k.Status.Conditions, metav1.Condition{Type: meta.StalledCondition, Status: metav1.ConditionTrue,
			Reason: meta.InvalidPathReason, Message: "path not found", ObservedGeneration: 2})
		return k
	}
	for _, tc := range []struct {
		name    string
		obj     *kustomizev1.Kustomization
		ready   bool
		failing bool
	}{
		{"never reconciled", ks(1, 0, 0, "", ""), false, false},
		{"no Ready condition", ks(1, 1, 0, "", ""), false, false},
		{"Ready of an older generation", ks(2, 2, 1, metav1.ConditionTrue, meta.ReconciliationSucceededReason), false, false},
		{"no condition generation, older observed", ks(2, 1, 0, metav1.ConditionTrue, meta.ReconciliationSucceededReason), false, false},
		{"Ready now", ks(2, 2, 2, metav1.ConditionTrue, meta.ReconciliationSucceededReason), true, false},
		{"in progress", ks(2, 2, 2, metav1.ConditionUnknown, meta.ProgressingReason), false, false},
		// As flux (kstatus): Ready=False is waited on, Stalled fails.
		{"failed, retrying", ks(2, 2, 2, metav1.ConditionFalse, meta.ReconciliationFailedReason), false, false},
		{"stalled", stalled(ks(2, 2, 2, metav1.ConditionFalse, meta.InvalidPathReason)), false, true},
	} {
		ok, err := Ready(mustKind(t, kustomizev1.KustomizationKind), tc.obj)
		if ok != tc.ready || (err != nil) != tc.failing {
			t.Errorf("%s: ready %v, err %v; want %v, failing %v", tc.name, ok, err, tc.ready, tc.failing)
		}
	}
	// An Alert has no status: static, ready at once.
	if ok, err := Ready(mustKind(t, notificationv1.AlertKind), &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1}}); !ok || err != nil {
		t.Errorf("static Alert: ready %v, err %v; want ready", ok, err)
	}
}

// TestUnreconciledHelmRepositoryIsReadyAtOnce: an OCI HelmRepository is
// never reconciled, so it is ready once accepted (as `create source helm`
// always judged it).
func TestUnreconciledHelmRepositoryIsReadyAtOnce(t *testing.T) {
	repo := &sourcev1.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: 1},
		Spec: sourcev1.HelmRepositorySpec{Type: sourcev1.HelmRepositoryTypeOCI}}
	if ok, err := Ready(mustKind(t, sourcev1.HelmRepositoryKind), repo); !ok || err != nil {
		t.Errorf("OCI HelmRepository: ready %v, err %v; want ready", ok, err)
	}
}

// TestHelmReleaseRevisionAfterFailedUpgrade: REVISION is, as in `flux get
// helmreleases`, the chart version of the newest release in history (the
// failed one), else the last attempted revision.
func TestHelmReleaseRevisionAfterFailedUpgrade(t *testing.T) {
	hr := &helmv2.HelmRelease{}
	hr.Status.LastAttemptedRevision = "6.1.0"
	if got := HelmReleaseRevision(hr); got != "6.1.0" {
		t.Errorf("no history: %q; want the last attempted revision", got)
	}
	hr.Status.LastAttemptedRevision = "6.2.0+bad"
	hr.Status.History = []helmv2.Snapshot{{ChartVersion: "6.2.0", Status: "failed"}, {ChartVersion: "6.1.0", Status: "superseded"}}
	if got := mustKind(t, helmv2.HelmReleaseKind).Revision(hr); got != "6.2.0" {
		t.Errorf("after a failed upgrade: %q; want the newest release's chart version 6.2.0", got)
	}
}

// TestEveryKindInTheTable: each row is complete and its New and NewList
// match, so a kind added with one row works in every command.
func TestEveryKindInTheTable(t *testing.T) {
	for _, k := range All {
		o := k.New()
		if got, ok := Of(o); !ok || got.Kind != k.Kind {
			t.Errorf("%s: Of(New()) = %s, %v", k.Kind, got.Kind, ok)
		}
		if k.Human == "" || k.Use == "" || k.GroupVersion.Empty() || (!k.Source && !k.Image && k.Plural == "") {
			t.Errorf("%s: incomplete row %+v", k.Kind, k)
		}
		if _, ok := o.(sourcev1.Source); ok != k.Source {
			t.Errorf("%s: a sourcev1.Source %v, Source %v", k.Kind, ok, k.Source)
		}
		if k.Columns == CellColumns && (k.Cells == nil || len(k.Cells(o)) != len(k.Headers)) {
			t.Errorf("%s: Cells do not give one cell per header %q", k.Kind, k.Headers)
		}
		if k.Image && (k.Done == nil || k.Revision != nil) {
			t.Errorf("%s: an image kind says its result by Done, not Revision", k.Kind)
		}
		if len(Items(k.NewList())) != 0 {
			t.Errorf("%s: a new list has items", k.Kind)
		}
	}
	if got := mustKind(t, sourcev1.GitRepositoryKind).GVR().Resource; got != "gitrepositories" {
		t.Errorf("GitRepository resource %q", got)
	}
}
