package controller

import (
	"context"
	"testing"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The suite runs on the api profile; each test runs the built
// image-reflector-controller against it and an in-process registry.
var env *testenv.Environment

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// newClient is a client whose scheme has image.toolkit.fluxcd.io v1.
func newClient(t *testing.T) client.Client {
	t.Helper()
	s := testenv.NewScheme()
	if err := imagev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func imageRepository(ns, name, image string, mod ...func(*imagev1.ImageRepository)) *imagev1.ImageRepository {
	r := &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       imagev1.ImageRepositorySpec{Image: image, Interval: metav1.Duration{Duration: 1e12}},
	}
	for _, m := range mod {
		m(r)
	}
	return r
}

func imagePolicy(ns, name, repo string, choice imagev1.ImagePolicyChoice, mod ...func(*imagev1.ImagePolicy)) *imagev1.ImagePolicy {
	p := &imagev1.ImagePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       imagev1.ImagePolicySpec{ImageRepositoryRef: metaRef(repo), Policy: choice},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func metaRef(name string) meta.NamespacedObjectReference {
	return meta.NamespacedObjectReference{Name: name}
}

// ready returns obj's Ready condition, nil if none.
func ready(obj client.Object) *metav1.Condition {
	conds, _ := testenv.Conditions(obj)
	return apimeta.FindStatusCondition(conds, meta.ReadyCondition)
}

func isReady(obj client.Object) bool {
	c := ready(obj)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
}

// failedWith tells whether obj's Ready is False with reason and message.
func failedWith(obj client.Object, reason, message string) func() bool {
	return func() bool {
		c := ready(obj)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == message
	}
}

func localRef(name string) *meta.LocalObjectReference { return &meta.LocalObjectReference{Name: name} }

func create(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}
