package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/reconciler"
)

// source resolves spec.sourceRef (kustomize.SourceOf) to the artifact of a
// GitRepository, an OCIRepository or a Bucket (the source kinds Eddy
// serves) or, with the ExternalArtifact gate on, an ExternalArtifact (off:
// AccessDenied, Flux's message); any other kind stalls with ArtifactFailed. A missing source or artifact is
// waited for at --requeue-dependency, with Flux's messages.
func (r *KustomizationReconciler) source(ctx context.Context, obj *kustomizev1.Kustomization) (client.Object, *meta.Artifact, *failure) {
	src, key, id, ok := kustomize.SourceOf(obj)
	if r.NoCrossNamespaceRefs && key.Namespace != obj.Namespace {
		return nil, nil, fail(kustomizev1.AccessDeniedReason, "can't access '%s', cross-namespace references have been blocked", id).Stall()
	}
	if obj.Spec.SourceRef.Kind == sourcev1.ExternalArtifactKind && !r.AllowExternalArtifact {
		return nil, nil, fail(kustomizev1.AccessDeniedReason, "can't access '%s', %s feature gate is disabled", id, controllerkit.ExternalArtifact).Stall()
	}
	if !ok {
		return nil, nil, fail(meta.ArtifactFailedReason, "source kind '%s' is not supported by Eddy yet", obj.Spec.SourceRef.Kind).Stall()
	}
	if err := r.Get(ctx, key, src); err != nil {
		f := fail(meta.ArtifactFailedReason, "Source '%s' not found", id)
		if !apierrors.IsNotFound(err) {
			f.Message = fmt.Sprintf("Source '%s' could not be read: %s", id, err)
		}
		f.Retry, f.Waiting = r.RequeueDependency, true
		return nil, nil, f
	}
	art := controllerkit.ArtifactOf(src)
	if art == nil {
		f := fail(meta.ArtifactFailedReason, "Source '%s' is not ready, artifact not found", id)
		f.Retry, f.Waiting = r.RequeueDependency, true
		return src, nil, f
	}
	return src, art, nil
}

// checkDependencies evaluates spec.dependsOn (reconciler.Dependencies): a
// dependency sharing obj's source must also have applied revision.
func (r *KustomizationReconciler) checkDependencies(ctx context.Context, obj *kustomizev1.Kustomization, revision string) *failure {
	return reconciler.Dependencies[*kustomizev1.Kustomization]{
		Reader: r.APIReader,
		New:    func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
		UpToDate: func(dep *kustomizev1.Kustomization) string {
			same := dep.Spec.SourceRef.Kind == obj.Spec.SourceRef.Kind && dep.Spec.SourceRef.Name == obj.Spec.SourceRef.Name &&
				nsOr(dep.Spec.SourceRef.Namespace, dep.Namespace) == nsOr(obj.Spec.SourceRef.Namespace, obj.Namespace)
			if same && dep.Status.LastAppliedRevision != revision {
				return "revision is not up to date"
			}
			return ""
		},
		Retry:       r.RequeueDependency,
		AdditiveCEL: r.AdditiveCELDependencyCheck,
	}.Check(ctx, obj, obj.Spec.DependsOn)
}

func nsOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}
