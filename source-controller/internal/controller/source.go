package controller

import (
	"context"
	"fmt"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file holds what the source kinds share: the stored artifact check,
// the suspended observation and the status summary.

// checkStoredArtifact returns obj's artifact cur with its URL refreshed
// when its file is in storage and matches its digest, after collecting the
// object's old artifacts; otherwise nil, the mismatching file deleted with
// a Warning event ArtifactVerificationFailed. Flux compatible
// (reconcileStorage of the sources). A path outside the object's own
// directory (kind's) is dropped untouched: the status may be forged.
func checkStoredArtifact(st *artifact.Storage, rec *events.Recorder, obj client.Object, kind string, cur *meta.Artifact) *meta.Artifact {
	owner := artifact.Owner{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if cur == nil || !owner.Holds(cur) || !st.Exists(*cur) {
		return nil
	}
	if err := st.Verify(*cur); err != nil {
		rec.Event(obj, corev1.EventTypeWarning, "ArtifactVerificationFailed",
			fmt.Sprintf("failed to verify integrity of artifact: %s", strings.ReplaceAll(err.Error(), st.BasePath+"/", "")), nil)
		_ = st.Remove(*cur)
		return nil
	}
	if deleted, err := st.GarbageCollect(*cur); err == nil && len(deleted) > 0 {
		rec.Event(obj, events.EventTypeTrace, "GarbageCollectionSucceeded",
			fmt.Sprintf("garbage collected %d artifacts", len(deleted)), nil)
	}
	cur.URL = st.URL(cur.Path)
	return cur
}

// sourceSkeleton is the reconcile skeleton of every source kind: the
// finalizer sourcev1.SourceFinalizer removes the object's stored artifacts,
// and a suspended object (suspended reports spec.suspend) is only observed.
func sourceSkeleton[T reconciler.Object](c client.Client, st *artifact.Storage, kind string, suspended func(T) bool) reconciler.Skeleton[T] {
	return reconciler.Skeleton[T]{
		Client:           c,
		Kind:             kind,
		Finalizer:        sourcev1.SourceFinalizer,
		Finalize:         finalizeSource[T](st, kind),
		Suspended:        suspended,
		ObserveSuspended: observeSuspended[T],
	}
}

// observeSuspended records what a reconcile of a suspended source (a
// GitRepository, a HelmRepository) observes, and nothing else (no event, no
// fetch): the handled reconcile request and, once it has conditions, its
// generation, so kstatus and `kubectl wait` read a suspended source as
// observed. Ready keeps its
// status and message at the new generation, Stalled is dropped, Reconciling
// becomes ProgressingWithRetry. Flux compatible (summarize with an empty
// result: ComputeReconcileResult, WithStatusObservedGeneration).
func observeSuspended[T reconciler.Object](obj T) {
	reconciler.RecordHandledRequest(obj)
	conds := obj.GetConditions()
	if len(conds) > 0 {
		apimeta.RemoveStatusCondition(&conds, meta.StalledCondition)
		for _, typ := range []string{meta.ReconcilingCondition, meta.ReadyCondition} {
			if c := apimeta.FindStatusCondition(conds, typ); c != nil {
				c.ObservedGeneration = obj.GetGeneration()
				if typ == meta.ReconcilingCondition {
					c.Reason = meta.ProgressingWithRetryReason
				}
			}
		}
		obj.SetConditions(conds)
		obj.SetObservedGeneration(obj.GetGeneration())
	}
}

// summarizeSource writes a source's conditions for the outcome recErr
// (nil: success). Flux compatible: ArtifactInStorage=True Succeeded with
// storedFormat (a format of the revision) while art is set; the failure
// conditions failConds removed, then recErr's set (abnormal-true, except
// the bi-polar SourceVerified) with a Warning event (a trace one for a
// wait); ArtifactOutdated removed on success; Ready mirrors
// ArtifactInStorage on success and the failure otherwise
// (reconciler.Summarize: Reconciling stays True with ProgressingWithRetry
// while retrying; Stalled is set when only a spec change can help).
func summarizeSource(obj reconciler.Object, rec *events.Recorder, art *meta.Artifact, storedFormat string,
	recErr *reconciler.Failure, failConds ...string) {
	if art != nil {
		reconciler.SetCondition(obj, sourcev1.ArtifactInStorageCondition, metav1.ConditionTrue, meta.SucceededReason,
			fmt.Sprintf(storedFormat, art.Revision))
	} else {
		reconciler.RemoveConditions(obj, sourcev1.ArtifactInStorageCondition)
	}
	reconciler.RemoveConditions(obj, failConds...)
	if recErr == nil {
		reconciler.RemoveConditions(obj, sourcev1.ArtifactOutdatedCondition)
		reconciler.Summarize(obj, nil, meta.SucceededReason, fmt.Sprintf(storedFormat, art.Revision))
		return
	}
	if recErr.Condition != "" {
		status := metav1.ConditionTrue // the failure conditions are abnormal-true
		if recErr.Condition == sourcev1.SourceVerifiedCondition {
			status = metav1.ConditionFalse // SourceVerified is bi-polar
		}
		reconciler.SetCondition(obj, recErr.Condition, status, recErr.Reason, recErr.Message)
	}
	reconciler.Summarize(obj, recErr, "", "")
	eventType := corev1.EventTypeWarning
	if recErr.Waiting {
		eventType = events.EventTypeTrace
	}
	// Whatever the reason, a failure is the reconcile's outcome. Flux compatible.
	rec.WithAction(sourcev1.ActionReconcile.String()).Event(obj, eventType, recErr.Reason, recErr.Message, nil)
}

// finalizeSource returns the Finalize step of a source kind: it removes
// the object's storage directory (all its artifacts and links). Flux
// compatible.
func finalizeSource[T client.Object](st *artifact.Storage, kind string) func(context.Context, T) (ctrl.Result, error) {
	return func(ctx context.Context, obj T) (ctrl.Result, error) {
		if err := st.RemoveObject(artifact.ObjectDir(kind, obj.GetNamespace(), obj.GetName())); err != nil {
			return ctrl.Result{}, fmt.Errorf("removing artifacts: %w", err)
		}
		ctrl.LoggerFrom(ctx).Info("artifacts removed, object released")
		return ctrl.Result{}, nil
	}
}
