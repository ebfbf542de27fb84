package kustomize

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// SourceOf tells where obj's spec.sourceRef points: key (the namespace
// defaulting to obj's), id (`Kind/namespace/name`, as messages name it)
// and an empty object of the source's kind to read it into. ok is false,
// src nil, for a kind Eddy does not serve a Kustomization from (it does
// GitRepository, OCIRepository and Bucket).
func SourceOf(obj *kustomizev1.Kustomization) (src client.Object, key types.NamespacedName, id string, ok bool) {
	ref := obj.Spec.SourceRef
	key = types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if key.Namespace == "" {
		key.Namespace = obj.Namespace
	}
	id = fmt.Sprintf("%s/%s/%s", ref.Kind, key.Namespace, ref.Name)
	switch ref.Kind {
	case sourcev1.GitRepositoryKind:
		return &sourcev1.GitRepository{}, key, id, true
	case sourcev1.OCIRepositoryKind:
		return &sourcev1.OCIRepository{}, key, id, true
	case sourcev1.BucketKind:
		return &sourcev1.Bucket{}, key, id, true
	case sourcev1.ExternalArtifactKind:
		return &sourcev1.ExternalArtifact{}, key, id, true
	}
	return nil, key, id, false
}
