package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// futureType is a Provider type that Eddy does not implement. Eddy
// implements all 35 types of its CRD's enum, so the API server refuses
// any other; a newer Flux CRD installed beside Eddy's controllers could
// admit one, which is what createFutureProvider sets up.
const futureType = "futurechat"

// createFutureProvider adds futureType to the type enum of every version
// of the cluster's Provider CRD (harmless to the other tests), then
// creates p with that type once the API server admits it.
func createFutureProvider(t *testing.T, p *notificationv1.Provider) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	enumPath := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "type", "enum"}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "providers.notification.toolkit.fluxcd.io"}, crd); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for i, v := range versions {
			version := v.(map[string]any)
			enum, _, _ := unstructured.NestedSlice(version, enumPath...)
			if !slices.Contains(enum, any(futureType)) {
				enum = append(enum, futureType)
			}
			if err := unstructured.SetNestedSlice(version, enum, enumPath...); err != nil {
				return err
			}
			versions[i] = version
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		return env.Client.Update(ctx, crd)
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Type = futureType
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := env.Client.Create(ctx, p.DeepCopy())
		if apierrors.IsInvalid(err) { // the new schema is not served yet
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating a Provider of type %s: %v", futureType, err)
	}
}
