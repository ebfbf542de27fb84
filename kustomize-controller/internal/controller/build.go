package controller

import (
	"context"
	"errors"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	digest "github.com/opencontainers/go-digest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/kustomize-controller/internal/decryptor"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/kustomize"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/eddyops/eddy/pkg/ssa"
)

// fetch downloads and unpacks art, the artifact of src of kind (through
// the artifact cache, which refuses an artifact source-controller did not
// sign for src).
func (r *KustomizationReconciler) fetch(ctx context.Context, kind string, src client.Object, art *meta.Artifact) (*kustomize.Tree, *failure) {
	owner := artifact.Owner{Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName()}
	tree, err := r.artifacts.Get(ctx, owner, art)
	if err == nil {
		return tree, nil
	}
	// Flux compatible (v1.10.1): the source may not have updated its
	// status yet, so a missing artifact or one whose digest changed is
	// waited for at --requeue-dependency.
	cause := ""
	switch {
	case errors.Is(err, artifact.ErrNotFound):
		cause = "artifact not found"
	case errors.Is(err, artifact.ErrDigestMismatch):
		cause = "artifact digest changed"
	}
	if cause != "" {
		f := fail(meta.ArtifactFailedReason, "Source is not ready, %s, retrying in %s", cause, r.RequeueDependency)
		f.Retry, f.Waiting = r.RequeueDependency, true
		return nil, f
	}
	return nil, fail(meta.ArtifactFailedReason, "%s", err)
}

// build builds obj's objects from tree, decrypting with spec.decryption
// when set, and refusing a SOPS-encrypted Secret when not. secrets masks
// the values read from Secrets and the decrypted ones in apply errors and
// drift events.
func (r *KustomizationReconciler) build(ctx context.Context, obj *kustomizev1.Kustomization, tree *kustomize.Tree) (res *kustomize.Result, secrets *redact.Values, f *failure) {
	opts, secretValues, f := r.buildOptions(ctx, obj)
	if f != nil {
		return nil, nil, f
	}
	var dec *decryptor.Decryptor
	if obj.Spec.Decryption != nil {
		// Flux compatible: the decryption Secret's keys are read for each
		// build; a failure to read them is a build failure.
		helper := r.SOPSHelper
		if helper == "" {
			helper, _ = decryptor.FindHelper() // "" when missing: New says so
		}
		var err error
		if dec, err = decryptor.New(ctx, r, obj, helper); err != nil {
			return nil, nil, fail(meta.BuildFailedReason, "%s", err)
		}
		opts.Decryptor = dec
	}
	res, err := kustomize.Build(tree, opts)
	if dec != nil {
		dec.Close()
		// Decrypted values are masked in apply errors as substituted
		// Secret values are.
		secretValues = append(dec.Values(), secretValues...)
	}
	secrets = redact.NewValues(kustomize.SecretMask, secretValues)
	if err != nil {
		if errors.Is(err, kustomize.ErrPathNotFound) {
			return nil, nil, fail(meta.ArtifactFailedReason, "%s", err) // Flux compatible reason
		}
		return nil, nil, fail(meta.BuildFailedReason, "%s", secrets.Mask(err.Error()))
	}
	if dec == nil {
		if f := refuseEncrypted(res.Objects); f != nil {
			return nil, nil, f
		}
	}
	return res, secrets, nil
}

// historyOf is what status.history records of a build of art: the digest
// of the built YAML (Flux compatible: its sha256) and the revisions.
func historyOf(res *kustomize.Result, art *meta.Artifact) (string, map[string]string) {
	metadata := map[string]string{"revision": art.Revision}
	if origin := art.Metadata["org.opencontainers.image.revision"]; origin != "" {
		metadata["originRevision"] = origin
	}
	return digest.FromBytes(res.YAML).String(), metadata
}

// buildOptions gathers the spec's overlays and postBuild variables
// (kustomize.Variables: substituteFrom in order, then substitute), and the
// values read from Secrets, masked in apply errors.
func (r *KustomizationReconciler) buildOptions(ctx context.Context, obj *kustomizev1.Kustomization) (kustomize.Options, []string, *failure) {
	vars, secrets, err := kustomize.VariablesAndSecrets(ctx, r, obj)
	if err != nil {
		return kustomize.SpecOptions(obj, nil, r.NonStrictSubstitutions), nil, fail(meta.BuildFailedReason, "%s", err)
	}
	return kustomize.SpecOptions(obj, vars, r.NonStrictSubstitutions), secrets, nil
}

// refuseEncrypted fails a set holding a SOPS-encrypted Secret when
// spec.decryption is not set, unless the Secret is annotated
// kustomize.toolkit.fluxcd.io/decrypt: disabled. Flux compatible message
// and reason (the apply fails, nothing is applied).
func refuseEncrypted(objs []*unstructured.Unstructured) *failure {
	for _, u := range objs {
		if u.GetKind() != "Secret" || u.GetAPIVersion() != "v1" {
			continue
		}
		if !kustomize.SOPSEncrypted(u.Object) || strings.EqualFold(u.GetAnnotations()[decryptor.DisabledAnnotation], kustomizev1.DisabledValue) {
			continue
		}
		return fail(meta.ReconciliationFailedReason, "%s is SOPS encrypted, configuring decryption is required for this secret to be reconciled", ssa.MetaOf(u))
	}
	return nil
}
