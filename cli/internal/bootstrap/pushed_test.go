package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The manifests are pushed, then the cluster refuses the source Secret:
// the error says the commits are pushed and that running bootstrap again
// finishes, so the user knows Git and the cluster differ.
func TestRunSaysWhenPushedButNotApplied(t *testing.T) {
	srv, bare := pushableRepo(t, gitserver.Options{})

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// Already installed and synced from the same path: no install step.
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "flux-system"},
		Spec: kustomizev1.KustomizationSpec{Path: "./clusters/dev"}}
	ks.Status.LastAppliedRevision = "main@sha1:0000000000000000000000000000000000000000"
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ks).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return errors.New("secrets is forbidden: User cannot create secrets")
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()

	o := Options{
		Remote:    Remote{URL: srv.URL + "/fleet.git", Branch: "main"},
		Namespace: "flux-system", Path: "./clusters/dev", SyncURL: srv.URL + "/fleet.git",
		Interval: time.Minute, SecretName: "flux-system",
		Secret:  SecretOptions{Username: "git", Password: "pw"},
		Author:  object.Signature{Name: "Eddy"},
		Install: install.DefaultOptions("v0.0.1"),
		Poll:    10 * time.Millisecond, Timeout: time.Second,
	}
	var out bytes.Buffer
	err := Run(context.Background(), ui.New(&out), c, o)
	if err == nil {
		t.Fatal("Run succeeded with the Secret refused")
	}
	if h := head(bare); h == "" {
		t.Fatal("nothing was pushed: the test does not reach the step after the push")
	}
	if !strings.Contains(err.Error(), "pushed") || !strings.Contains(err.Error(), "run bootstrap again") {
		t.Errorf("error %q does not say the manifests are pushed and how to finish", err)
	}
}

func head(bare string) string {
	h, _ := gitserver.Git(bare, "rev-parse", "--verify", "-q", "refs/heads/main")
	return h
}
