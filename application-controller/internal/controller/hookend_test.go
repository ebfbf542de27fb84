package controller

import (
	"context"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/application-controller/internal/plan"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// hookEndFixture is a two-step sync (ConfigMap settings, then the
// PostSync HookSucceeded Job notify) whose status records both applied
// and the hook Running, while the live Job has completed.
func hookEndFixture(t *testing.T) (*ApplicationReconciler, *argov1.Application, *argov1.OperationState, *comparison, client.Client) {
	t.Helper()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "ns"}, "data": map[string]any{"v": "one"}}}
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "notify", "namespace": "ns", "annotations": map[string]any{
			"argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}}}}
	liveJob := job.DeepCopy()
	liveJob.SetFinalizers([]string{argov1.FinalizerHook})
	liveJob.Object["status"] = map[string]any{"succeeded": int64(1), "conditions": []any{
		map[string]any{"type": "Complete", "status": "True"}}}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cm.DeepCopy(), liveJob).Build()
	r := &ApplicationReconciler{Client: cl, APIReader: cl, Log: logr.Discard(), waves: &waveGate{}}
	src := argov1.ApplicationSource{RepoURL: "https://example.com/repo.git", Path: "app"}
	app := &argov1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "a"},
		Spec: argov1.ApplicationSpec{Source: &src}}
	st := &argov1.OperationState{Operation: argov1.Operation{Sync: &argov1.SyncOperation{}}, Phase: argov1.OperationRunning,
		StartedAt: metav1.Now(), Message: "waiting for completion of hook batch/Job/notify",
		SyncResult: &argov1.SyncOperationResult{Revision: "abc", Source: src, Resources: []*argov1.ResourceResult{
			{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "settings", Status: argov1.ResultSynced, SyncPhase: plan.PhaseSync},
			{Group: "batch", Version: "v1", Kind: "Job", Namespace: "ns", Name: "notify", Status: argov1.ResultSynced,
				SyncPhase: plan.PhasePostSync, HookType: plan.PhasePostSync, HookPhase: argov1.OperationRunning},
		}}}
	cmKey := plan.Key("", "ConfigMap", "ns", "settings")
	c := &comparison{target: &target{revisions: []string{"abc"}, sources: []argov1.ApplicationSource{src}},
		project: &argov1.AppProject{}, desired: map[string]*unstructured.Unstructured{cmKey: cm},
		hooks: []*unstructured.Unstructured{job}, live: map[string]*unstructured.Unstructured{cmKey: cm},
		status: map[string]string{cmKey: argov1.SyncStatusSynced}}
	return r, app, st, c, cl
}

// TestHookIsDeletedOnlyAfterItsEndIsRecorded: the pass that sees a
// HookSucceeded hook complete records its end and keeps the hook (and
// its hook finalizer); the operation succeeds, and the hook is deleted,
// on the next pass, which starts from a status recording that end. A
// controller killed between the delete and the status write would else
// find the hook missing and fail a sync that succeeded.
func TestHookIsDeletedOnlyAfterItsEndIsRecorded(t *testing.T) {
	r, app, st, c, cl := hookEndFixture(t)
	ctx := context.Background()
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("batch/v1")
	job.SetKind("Job")
	key := client.ObjectKey{Namespace: "ns", Name: "notify"}

	out := r.syncPass(ctx, app, st, c)
	if out.phase != argov1.OperationRunning {
		t.Fatalf("first pass: %s %q, want Running until the hook's end is written", out.phase, out.message)
	}
	if res := st.SyncResult.Resources[1]; res.HookPhase != argov1.OperationSucceeded {
		t.Errorf("first pass: hook result %s, want Succeeded", res.HookPhase)
	}
	if err := cl.Get(ctx, key, job); err != nil {
		t.Fatalf("first pass deleted the hook before its end was written: %v", err)
	}
	if fins := job.GetFinalizers(); len(fins) != 1 || fins[0] != argov1.FinalizerHook {
		t.Errorf("first pass: hook finalizers %v, want the hook finalizer kept", fins)
	}

	out = r.syncPass(ctx, app, st, c)
	if out.phase != argov1.OperationSucceeded {
		t.Fatalf("second pass: %s %q, want Succeeded", out.phase, out.message)
	}
	if err := cl.Get(ctx, key, job); !apierrors.IsNotFound(err) {
		t.Errorf("second pass: hook still there (%v), want it deleted", err)
	}

	// Killed after that delete, before the end was written: the status
	// still records the hook Succeeded, and the restarted pass ends the
	// sync as it did.
	if out := r.syncPass(ctx, app, st, c); out.phase != argov1.OperationSucceeded {
		t.Errorf("pass after a restart: %s %q, want Succeeded", out.phase, out.message)
	}
}

func TestUnrecordedHookEndIsAHookEndNotYetInTheStatus(t *testing.T) {
	hook := func(status, phase string) *argov1.ResourceResult {
		return &argov1.ResourceResult{Kind: "Job", Name: "h", Status: status, HookType: plan.PhasePreSync, HookPhase: phase}
	}
	cases := []struct {
		name      string
		res       *argov1.ResourceResult
		endBefore bool
		want      bool
	}{
		{"hook succeeded in this pass", hook(argov1.ResultSynced, argov1.OperationSucceeded), false, true},
		{"hook failed in this pass", hook(argov1.ResultSynced, argov1.OperationFailed), false, true},
		{"hook end already recorded", hook(argov1.ResultSynced, argov1.OperationSucceeded), true, false},
		{"hook still running", hook(argov1.ResultSynced, argov1.OperationRunning), false, false},
		{"hook that failed to apply", hook(argov1.ResultSyncFailed, argov1.OperationFailed), false, false},
		{"object, not a hook", &argov1.ResourceResult{Kind: "ConfigMap", Status: argov1.ResultSynced, HookPhase: argov1.OperationSucceeded}, false, false},
	}
	for _, c := range cases {
		run := &syncRun{results: map[string]*argov1.ResourceResult{"k": c.res}, endedBefore: map[string]bool{"k": c.endBefore}}
		if got := run.unrecordedHookEnd(); got != c.want {
			t.Errorf("%s: unrecordedHookEnd = %v, want %v", c.name, got, c.want)
		}
	}
}
