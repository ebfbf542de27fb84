package ssa

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitFirstStage waits until the set's CRDs are Established and its
// Namespaces exist.
func (m *Manager) waitFirstStage(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if stage(u) > 0 || flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" {
			continue
		}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			err := m.poll(ctx, func() (bool, error) { return m.crdReady(ctx, u), nil })
			if err != nil {
				return fmt.Errorf("%s is not Established: %w", MetaOf(u), err)
			}
		case "Namespace":
			err := m.poll(ctx, func() (bool, error) {
				ns := &unstructured.Unstructured{}
				ns.SetGroupVersionKind(u.GroupVersionKind())
				return m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, ns) == nil, nil
			})
			if err != nil {
				return fmt.Errorf("%s was not created: %w", MetaOf(u), err)
			}
		}
	}
	return nil
}

// crdReady reports whether the CRD named like u is Established and its
// kind is mapped by the client's REST mapper. The CRD is read as
// unstructured, so the wait works whatever the client's scheme registers
// (a controller's scheme need not know apiextensions.k8s.io).
func (m *Manager) crdReady(ctx context.Context, u *unstructured.Unstructured) bool {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := m.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, crd); err != nil {
		return false
	}
	// kstatus reads a CRD as Current once it is Established.
	if res, err := status.Compute(crd); err != nil || res.Status != status.CurrentStatus {
		return false
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	var versions []string
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range vs {
		v, _ := v.(map[string]any)
		if name, _ := v["name"].(string); name != "" && v["served"] == true {
			versions = append(versions, name)
		}
	}
	// The kind must also be mapped before its objects are applied. Naming
	// the versions makes a lazy mapper that already knows the group (from
	// an earlier CRD of it) fetch them, instead of answering from the
	// group's cached version list.
	_, err := m.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}, versions...)
	return err == nil
}

// crdGVK is the kind of CustomResourceDefinitions (apiextensions.k8s.io/v1).
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func (m *Manager) poll(ctx context.Context, done func() (bool, error)) error {
	timeout, interval := m.StageTimeout, m.Poll
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if interval <= 0 {
		interval = 2 * time.Second
	}
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return done() })
	if wait.Interrupted(err) {
		return fmt.Errorf("timeout after %s", timeout)
	}
	return err
}
