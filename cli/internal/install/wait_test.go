package install

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A Deployment the API server cannot be asked about is not "not found":
// the timeout error carries the Get error.
func TestWaitDeploymentsSaysGetError(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("deployments.apps is forbidden: User cannot get deployments")
		},
	}).Build()
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace("flux-system")
	d.SetName("source-controller")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := WaitDeployments(ctx, c, []*unstructured.Unstructured{d}, 5*time.Millisecond, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "forbidden") || strings.Contains(err.Error(), "not found") {
		t.Fatalf("error %v, want the Get error", err)
	}
}
