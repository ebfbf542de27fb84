package dev

import (
	"context"
	"fmt"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/pkg/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunsAsAnnotation marks the controllers' Deployments of `eddy dev`: they
// have 0 replicas because the controllers run on this machine as processes
// (`eddy dev status` lists them). No pod stands in for a controller.
const RunsAsAnnotation = "eddy.dev/runs-as"

// RunsAsLocalProcess is RunsAsAnnotation's value.
const RunsAsLocalProcess = "local-process"

// BundleOptions are the install options of eddy dev's bundle: `eddy
// install`'s defaults with application-controller, which eddy dev runs as
// its fifth process (its CRDs and the argocd namespace come with it), and
// the optional controllers of optional (see OptionalFor).
func BundleOptions(version string, optional ...string) install.Options {
	o := install.DefaultOptions(version)
	o.ComponentsExtra = append([]string{install.ApplicationController}, optional...)
	return o
}

// installBundle installs from the install bundle objs (`eddy install`'s
// objects) what makes the environment look installed to `eddy check`,
// `eddy version` and the flux CLI: the labelled CRDs (waiting until they
// are served), the Namespace with its labels, and each controller's
// Deployment scaled to 0 with RunsAsAnnotation. The bundle's RBAC,
// Services and NetworkPolicies are left out: nothing runs in the cluster
// for them to serve.
func installBundle(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var defs []*apiextensionsv1.CustomResourceDefinition
	var namespaces, deployments []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
				return fmt.Errorf("CustomResourceDefinition %s: %w", o.GetName(), err)
			}
			defs = append(defs, crd)
		case "Namespace":
			namespaces = append(namespaces, o)
		case "Deployment":
			d := o.DeepCopy()
			if err := unstructured.SetNestedField(d.Object, int64(0), "spec", "replicas"); err != nil {
				return err
			}
			ann := d.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[RunsAsAnnotation] = RunsAsLocalProcess
			d.SetAnnotations(ann)
			deployments = append(deployments, d)
		}
	}
	if len(defs) == 0 {
		return fmt.Errorf("the install bundle has no CustomResourceDefinition")
	}
	if err := crds.Install(ctx, c, defs); err != nil {
		return err
	}
	for _, o := range append(namespaces, deployments...) {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(install.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}
