package controller

import (
	"context"
	"fmt"
	"path"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managedByLabel marks the generated ExternalArtifacts, as Flux's.
const managedByLabel = "app.kubernetes.io/managed-by"

// publish creates or updates one ExternalArtifact per built artifact and
// returns the new inventory. An ExternalArtifact of that name whose
// sourceRef names another object is not taken over (beyond Flux, which
// force-applies): two generators never overwrite each other's artifacts.
func (r *ArtifactGeneratorReconciler) publish(ctx context.Context, obj *swv1.ArtifactGenerator, outs []built) ([]swv1.ExternalArtifactReference, *reconciler.Failure) {
	refs := make([]swv1.ExternalArtifactReference, 0, len(outs))
	for _, b := range outs {
		if err := r.publishOne(ctx, obj, b); err != nil {
			return nil, reconciler.Fail(meta.ReconciliationFailedReason, "%s reconcile failed: %s", b.out.Name, err)
		}
		refs = append(refs, swv1.ExternalArtifactReference{Name: b.out.Name, Namespace: obj.Namespace,
			Digest: b.art.Digest, Filename: path.Base(b.art.Path)})
	}
	return refs, nil
}

func ownerRef(obj *swv1.ArtifactGenerator) *meta.NamespacedObjectKindReference {
	return &meta.NamespacedObjectKindReference{APIVersion: swv1.GroupVersion.String(), Kind: swv1.ArtifactGeneratorKind,
		Name: obj.Name, Namespace: obj.Namespace}
}

func (r *ArtifactGeneratorReconciler) publishOne(ctx context.Context, obj *swv1.ArtifactGenerator, b built) error {
	ea := &sourcev1.ExternalArtifact{}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: b.out.Name}
	err := r.Get(ctx, key, ea)
	switch {
	case apierrors.IsNotFound(err):
		ea = &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
		setMetadata(obj, ea)
		ea.Spec.SourceRef = ownerRef(obj)
		if err := r.Create(ctx, ea, client.FieldOwner(ControllerName)); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if ref := ea.Spec.SourceRef; ref != nil && (ref.Kind != swv1.ArtifactGeneratorKind || ref.Name != obj.Name ||
			(ref.Namespace != "" && ref.Namespace != obj.Namespace)) {
			return fmt.Errorf("ExternalArtifact %s exists with sourceRef %s/%s, not this ArtifactGenerator", key, ref.Kind, ref.Name)
		}
		base := ea.DeepCopy()
		setMetadata(obj, ea)
		ea.Spec.SourceRef = ownerRef(obj)
		if err := r.Patch(ctx, ea, client.MergeFrom(base), client.FieldOwner(ControllerName)); err != nil {
			return err
		}
	}
	base := ea.DeepCopy()
	ea.Status.Artifact = b.art
	apimeta.SetStatusCondition(&ea.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: meta.SucceededReason, Message: "Artifact is ready", ObservedGeneration: ea.Generation})
	return r.Status().Patch(ctx, ea, client.MergeFrom(base), client.FieldOwner(ControllerName))
}

// setMetadata sets the common metadata, then the controller's labels
// (which common metadata cannot override).
func setMetadata(obj *swv1.ArtifactGenerator, ea *sourcev1.ExternalArtifact) {
	if ea.Labels == nil {
		ea.Labels = map[string]string{}
	}
	if cm := obj.Spec.CommonMetadata; cm != nil {
		for k, v := range cm.Labels {
			ea.Labels[k] = v
		}
		for k, v := range cm.Annotations {
			if ea.Annotations == nil {
				ea.Annotations = map[string]string{}
			}
			ea.Annotations[k] = v
		}
	}
	ea.Labels[managedByLabel] = ControllerName
	ea.Labels[swv1.GeneratorLabel] = string(obj.UID)
}

// collect removes the ExternalArtifacts (and their stored files) of the
// old inventory that the new one no longer lists, and the superseded
// files of the current ones beyond the retention flags.
func (r *ArtifactGeneratorReconciler) collect(ctx context.Context, old, current []swv1.ExternalArtifactReference, outs []built) {
	keep := map[string]bool{}
	for _, ref := range current {
		keep[ref.Namespace+"/"+ref.Name] = true
	}
	var gone []swv1.ExternalArtifactReference
	for _, ref := range old {
		if !keep[ref.Namespace+"/"+ref.Name] {
			gone = append(gone, ref)
		}
	}
	r.remove(ctx, gone)
	for _, b := range outs {
		if deleted, err := r.Storage.GarbageCollect(*b.art); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "collecting superseded artifacts", "artifact", b.out.Name)
		} else if len(deleted) > 0 {
			ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("garbage collected %d old artifact(s)", len(deleted)), "artifacts", deleted)
		}
	}
}

// remove deletes the ExternalArtifacts of refs and their storage
// directories; failures are logged (Flux's behaviour: the generator's own
// reconcile does not fail for them).
func (r *ArtifactGeneratorReconciler) remove(ctx context.Context, refs []swv1.ExternalArtifactReference) {
	log := ctrl.LoggerFrom(ctx)
	for _, ref := range refs {
		if err := r.Storage.RemoveObject(artifact.ObjectDir(sourcev1.ExternalArtifactKind, ref.Namespace, ref.Name)); err != nil {
			log.Error(err, "removing stored artifacts", "externalartifact", ref.Namespace+"/"+ref.Name)
		}
		ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		if err := r.Delete(ctx, ea); client.IgnoreNotFound(err) != nil {
			log.Error(err, "deleting ExternalArtifact", "externalartifact", ref.Namespace+"/"+ref.Name)
		} else {
			log.Info("ExternalArtifact deleted", "externalartifact", ref.Namespace+"/"+ref.Name)
		}
	}
}

// finalize removes everything the ArtifactGenerator generated.
func (r *ArtifactGeneratorReconciler) finalize(ctx context.Context, obj *swv1.ArtifactGenerator) (ctrl.Result, error) {
	r.remove(ctx, obj.Status.Inventory)
	return ctrl.Result{}, nil
}

// drift returns why obj must be built again, "" when its inventory is up
// to date: Ready at this generation, the same sources, every artifact
// stored and intact, and the ExternalArtifacts in the cluster those of the
// inventory.
func (r *ArtifactGeneratorReconciler) drift(ctx context.Context, obj *swv1.ArtifactGenerator, digest string) string {
	switch {
	case !readyAt(obj):
		return "NotReady"
	case obj.Status.ObservedSourcesDigest != digest:
		return "SourcesChanged"
	case len(obj.Status.Inventory) != len(obj.Spec.OutputArtifacts):
		return "ArtifactsChanged"
	}
	for _, ref := range obj.Status.Inventory {
		a := meta.Artifact{Digest: ref.Digest,
			Path: path.Join(artifact.ObjectDir(sourcev1.ExternalArtifactKind, ref.Namespace, ref.Name), ref.Filename)}
		if !r.Storage.Exists(a) {
			return "ArtifactMissing"
		}
		if err := r.Storage.Verify(a); err != nil {
			_ = r.Storage.Remove(a)
			return "ArtifactCorrupted"
		}
	}
	var list sourcev1.ExternalArtifactList
	if err := r.List(ctx, &list, client.InNamespace(obj.Namespace), client.MatchingLabels{swv1.GeneratorLabel: string(obj.UID)}); err != nil {
		return "ExternalArtifactsNotFound"
	}
	if len(list.Items) != len(obj.Status.Inventory) {
		return "ExternalArtifactsChanged"
	}
	for _, ea := range list.Items {
		if ea.Status.Artifact == nil || !obj.InInventory(ea.Name, ea.Namespace, ea.Status.Artifact.Digest) {
			return "ExternalArtifactsChanged"
		}
	}
	return ""
}
