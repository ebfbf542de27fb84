package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

const finalizer = "test.eddy.dev/finalizer"

// newObject creates a Kustomization (any kind with conditions would do) in
// a new namespace, with a reconcile request token.
func newObject(t *testing.T, mutate func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reconcile-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	obj := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "obj", Namespace: ns.Name,
			Annotations: map[string]string{meta.ReconcileRequestAnnotation: "token-1"}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute},
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "src"}},
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func skeleton(finalize func(context.Context, *kustomizev1.Kustomization) (ctrl.Result, error)) *reconciler.Skeleton[*kustomizev1.Kustomization] {
	return &reconciler.Skeleton[*kustomizev1.Kustomization]{
		Client: env.Client, FieldOwner: "reconcile-test", Finalizer: finalizer, Finalize: finalize,
		Suspended: func(o *kustomizev1.Kustomization) bool { return o.Spec.Suspend },
	}
}

// get reads obj's stored state and checks its status conventions.
func get(t *testing.T, obj client.Object) *kustomizev1.Kustomization {
	t.Helper()
	got := &kustomizev1.Kustomization{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	testenv.CheckStatus(t, got)
	return got
}

func request(obj client.Object) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

// TestStatusWrittenOnEveryReturn: run returns early without writing the
// status; the skeleton still writes it, with the handled request, adds the
// finalizer, and reports a stalled failure as a TerminalError.
func TestStatusWrittenOnEveryReturn(t *testing.T) {
	obj := newObject(t, nil)
	_, err := skeleton(nil).Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(_ context.Context, o *kustomizev1.Kustomization, _ *reconciler.StatusPatcher) (ctrl.Result, error) {
			f := reconciler.Fail(meta.BuildFailedReason, "refused: %s", "spec.x").Stall()
			reconciler.Summarize(o, f, "", "")
			return ctrl.Result{}, f
		})
	if !errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Errorf("error %v, want a TerminalError", err)
	}
	got := get(t, obj)
	if got.Status.LastHandledReconcileAt != "token-1" {
		t.Errorf("lastHandledReconcileAt %q, want token-1", got.Status.LastHandledReconcileAt)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, want %d", got.Status.ObservedGeneration, got.Generation)
	}
	stalled := apimeta.FindStatusCondition(got.Status.Conditions, meta.StalledCondition)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Message != "refused: spec.x" ||
		!apimeta.IsStatusConditionFalse(got.Status.Conditions, meta.ReadyCondition) {
		t.Errorf("conditions %+v, want Ready=False and Stalled=True", got.Status.Conditions)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != finalizer {
		t.Errorf("finalizers %v, want [%s]", got.Finalizers, finalizer)
	}
}

// TestRetryKeepsTheStep: a failure that may pass on retry keeps Reconciling
// with the step it failed in, and leaves observedGeneration; success then
// clears it.
func TestRetryKeepsTheStep(t *testing.T) {
	obj := newObject(t, nil)
	s := skeleton(nil)
	_, err := s.Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			reconciler.Progressing(o, "Building manifests")
			if err := p.Patch(ctx); err != nil {
				return ctrl.Result{}, err
			}
			f := reconciler.Fail(meta.BuildFailedReason, "build failed")
			reconciler.Summarize(o, f, "", "")
			return ctrl.Result{RequeueAfter: time.Minute}, f
		})
	if err == nil || errors.Is(err, crreconcile.TerminalError(nil)) {
		t.Errorf("error %v, want the failure, not terminal", err)
	}
	got := get(t, obj)
	rc := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition)
	if rc == nil || rc.Reason != meta.ProgressingWithRetryReason || rc.Message != "Building manifests" {
		t.Errorf("Reconciling %+v, want ProgressingWithRetry \"Building manifests\"", rc)
	}
	if got.Status.ObservedGeneration == got.Generation {
		t.Error("observedGeneration recorded for a failure that is retried")
	}

	_, err = s.Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			reconciler.Summarize(o, nil, meta.SucceededReason, "done")
			return ctrl.Result{}, p.Finish(ctx)
		})
	if err != nil {
		t.Fatal(err)
	}
	got = get(t, obj)
	if !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReadyCondition) ||
		apimeta.FindStatusCondition(got.Status.Conditions, meta.ReconcilingCondition) != nil ||
		got.Status.ObservedGeneration != got.Generation {
		t.Errorf("status %+v, want Ready=True, no Reconciling, observedGeneration %d", got.Status, got.Generation)
	}
}

// TestSuspendedAndDeleted: a suspended object is observed, not run (a
// Ready one at its new generation, Ready's included, for kubectl wait); a
// deleted one is finalized and released.
func TestSuspendedAndDeleted(t *testing.T) {
	ctx := context.Background()
	obj := newObject(t, nil)
	finalized := 0
	s := skeleton(func(context.Context, *kustomizev1.Kustomization) (ctrl.Result, error) {
		finalized++
		return ctrl.Result{}, nil
	})
	ready := func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
		reconciler.Summarize(o, nil, meta.SucceededReason, "done")
		return ctrl.Result{}, nil
	}
	if _, err := s.Reconcile(ctx, request(obj), &kustomizev1.Kustomization{}, ready); err != nil {
		t.Fatal(err)
	}
	suspended := get(t, obj)
	suspended.Spec.Suspend = true
	suspended.Annotations[meta.ReconcileRequestAnnotation] = "token-2"
	if err := env.Client.Update(ctx, suspended); err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, *kustomizev1.Kustomization, *reconciler.StatusPatcher) (ctrl.Result, error) {
		t.Error("run called for a suspended or deleted object")
		return ctrl.Result{}, nil
	}
	if _, err := s.Reconcile(ctx, request(obj), &kustomizev1.Kustomization{}, never); err != nil {
		t.Fatal(err)
	}
	got := get(t, obj)
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); got.Status.LastHandledReconcileAt != "token-2" ||
		got.Status.ObservedGeneration != got.Generation || c == nil || c.ObservedGeneration != got.Generation {
		t.Errorf("suspended: lastHandledReconcileAt %q, observedGeneration %d, Ready %+v; want token-2 and generation %d",
			got.Status.LastHandledReconcileAt, got.Status.ObservedGeneration, c, got.Generation)
	}
	if err := env.Client.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx, request(obj), &kustomizev1.Kustomization{}, never); err != nil {
		t.Fatal(err)
	}
	if finalized != 1 {
		t.Errorf("Finalize ran %d times, want 1", finalized)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &kustomizev1.Kustomization{}); !apierrors.IsNotFound(err) {
		t.Errorf("the object is still there after finalizing (%v)", err)
	}
}

// TestPendingLeavesTheRequest: a reconcile whose outcome a later one
// writes (Pending) writes its status but not the handled request.
func TestPendingLeavesTheRequest(t *testing.T) {
	obj := newObject(t, nil)
	_, err := skeleton(nil).Reconcile(context.Background(), request(obj), &kustomizev1.Kustomization{},
		func(ctx context.Context, o *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			reconciler.Progressing(o, "Running health checks")
			return ctrl.Result{}, p.Pending(ctx)
		})
	if err != nil {
		t.Fatal(err)
	}
	got := get(t, obj)
	if got.Status.LastHandledReconcileAt != "" || !apimeta.IsStatusConditionTrue(got.Status.Conditions, meta.ReconcilingCondition) {
		t.Errorf("lastHandledReconcileAt %q, conditions %+v; want none handled and Reconciling=True",
			got.Status.LastHandledReconcileAt, got.Status.Conditions)
	}
}

// Example: a kind's Reconcile on the skeleton. run does the kind's steps
// and summarizes; the skeleton does the rest.
func Example() {
	var c client.Client // the manager's client
	skel := reconciler.Skeleton[*kustomizev1.Kustomization]{
		Client:    c,
		Kind:      kustomizev1.KustomizationKind,
		Finalizer: kustomizev1.KustomizationFinalizer,
		Suspended: func(o *kustomizev1.Kustomization) bool { return o.Spec.Suspend },
	}
	reconcileOne := func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		return skel.Reconcile(ctx, req, &kustomizev1.Kustomization{},
			func(ctx context.Context, obj *kustomizev1.Kustomization, p *reconciler.StatusPatcher) (ctrl.Result, error) {
				var f *reconciler.Failure // the outcome of the kind's steps
				if obj.Spec.Path == "" {
					f = reconciler.Fail(meta.BuildFailedReason, "spec.path is empty").Stall()
				}
				reconciler.Summarize(obj, f, meta.SucceededReason, "Applied")
				if f != nil {
					return ctrl.Result{}, f // stalled: a TerminalError
				}
				return ctrl.Result{RequeueAfter: obj.Spec.Interval.Duration}, nil
			})
	}
	fmt.Println(reconcileOne != nil)
	// Output: true
}
