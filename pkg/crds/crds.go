// Package crds reads CustomResourceDefinitions from files (config/crd/bases)
// and installs them on a cluster, waiting until they are served. Used by the
// test harness and by `eddy dev`.
package crds

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Read decodes every *.yaml file of dir as a CustomResourceDefinition; an
// empty dir is an error telling to run `make generate`.
func Read(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files in %s: run `make generate`", dir)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Install creates or updates the CRDs, then waits (30s at most) until each
// is Established and every version of its kind resolves through discovery,
// so that clients can map it.
func Install(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		obj := crd.DeepCopy()
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			existing := &apiextensionsv1.CustomResourceDefinition{}
			if err = c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
				obj.ResourceVersion = existing.ResourceVersion
				err = c.Update(ctx, obj)
			}
		}
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitFor := func(what string, ready func() bool) error {
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) { return ready(), nil })
		if err != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		return nil
	}
	for _, crd := range crds {
		err := waitFor("CustomResourceDefinition "+crd.Name+" not Established", func() bool {
			got := &apiextensionsv1.CustomResourceDefinition{}
			return c.Get(ctx, client.ObjectKeyFromObject(crd), got) == nil && established(got)
		})
		if err != nil {
			return err
		}
		// Established does not mean discovery serves the kind yet; clients
		// map kinds through discovery.
		for _, v := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			err := waitFor(gvk.String()+" not in discovery", func() bool {
				_, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
				return err == nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
