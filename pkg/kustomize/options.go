package kustomize

import (
	"context"
	"fmt"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SpecOptions returns the build options of obj's spec: path and overlays,
// and, when spec.postBuild is set, substitution with vars (from Variables)
// per its strategy. nonStrict is Flux's StrictPostBuildSubstitutions=false.
func SpecOptions(obj *kustomizev1.Kustomization, vars map[string]string, nonStrict bool) Options {
	s := obj.Spec
	opts := Options{
		Path: s.Path, TargetNamespace: s.TargetNamespace, NamePrefix: s.NamePrefix, NameSuffix: s.NameSuffix,
		Patches: s.Patches, Images: s.Images, Components: s.Components, IgnoreMissingComponents: s.IgnoreMissingComponents,
		CommonMetadata: s.CommonMetadata,
	}
	for _, m := range s.BuildMetadata {
		opts.BuildMetadata = append(opts.BuildMetadata, string(m))
	}
	if s.PostBuild != nil {
		opts.PostBuild, opts.Vars, opts.Strategy, opts.NonStrict = true, vars, s.PostBuild.SubstituteStrategy, nonStrict
	}
	return opts
}

// Variables reads obj's postBuild variables: the ConfigMaps and Secrets of
// spec.postBuild.substituteFrom (in obj's namespace) in order, later
// entries overriding earlier ones, then spec.postBuild.substitute over all.
// Flux compatible precedence. A missing optional source is skipped; any
// other read error is "substitute from '<Kind>/<name>' error: <reason>".
// Without spec.postBuild the map is empty.
func Variables(ctx context.Context, c client.Reader, obj *kustomizev1.Kustomization) (map[string]string, error) {
	vars, _, err := VariablesAndSecrets(ctx, c, obj)
	return vars, err
}

// VariablesAndSecrets is Variables that also returns the values read from
// Secrets, which an error message must not show (redact.Values).
func VariablesAndSecrets(ctx context.Context, c client.Reader, obj *kustomizev1.Kustomization) (vars map[string]string, secrets []string, err error) {
	vars = map[string]string{}
	if obj.Spec.PostBuild == nil {
		return vars, nil, nil
	}
	for _, ref := range obj.Spec.PostBuild.SubstituteFrom {
		var from client.Object
		switch ref.Kind {
		case "ConfigMap":
			from = &corev1.ConfigMap{}
		case "Secret":
			from = &corev1.Secret{}
		default:
			continue // the CRD allows only the two
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, from); err != nil {
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			return nil, nil, fmt.Errorf("substitute from '%s/%s' error: %s", ref.Kind, ref.Name, err)
		}
		switch o := from.(type) {
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				vars[k] = v
			}
		case *corev1.Secret:
			for k, v := range o.Data {
				vars[k] = string(v)
				secrets = append(secrets, string(v))
			}
		}
	}
	for k, v := range obj.Spec.PostBuild.Substitute {
		vars[k] = v
	}
	return vars, secrets, nil
}

// SecretMask replaces a secret value (a decrypted value, a value
// substituted from a Secret) in a Kustomization's messages, masked with
// redact.Values: the API server can echo such a value in an apply error.
// Flux compatible (kustomize-controller v1.9.6).
const SecretMask = "*****"

// The labels naming the Kustomization that applies an object. Flux
// compatible.
const (
	NameLabel      = "kustomize.toolkit.fluxcd.io/name"
	NamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// SetOwnerLabels sets NameLabel and NamespaceLabel on each object, as the
// controller does before it applies them.
func SetOwnerLabels(objs []*unstructured.Unstructured, name, namespace string) {
	for _, u := range objs {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[NameLabel], labels[NamespaceLabel] = name, namespace
		u.SetLabels(labels)
	}
}
