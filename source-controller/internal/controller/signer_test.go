package controller

import (
	"context"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestArtifactsAreSignedForTheirObject: every artifact source-controller
// writes verifies with the cluster's key for its own object, and an
// include whose status was forged to point at another namespace's stored
// artifact is refused rather than copied in.
func TestArtifactsAreSignedForTheirObject(t *testing.T) {
	ctx := context.Background()
	keys := artifact.NewSecretKeyring(env.Client, nil)
	other := newNamespace(t)
	secret := waitReady(t, newGitRepository(t, other, "secret", newRepo(t, map[string]string{"token.yaml": "kind: Secret\n"}).URL(), nil))
	owner := artifact.Owner{Kind: sourcev1.GitRepositoryKind, Namespace: other, Name: "secret"}
	if err := artifact.VerifySignature(ctx, keys, owner, secret.Status.Artifact); err != nil {
		t.Fatalf("a published artifact: %v", err)
	}

	ns := newNamespace(t)
	lib := waitReady(t, newGitRepository(t, ns, "lib", newRepo(t, map[string]string{"lib.yaml": "kind: ConfigMap\n"}).URL(), nil))
	update(t, lib, func(o *sourcev1.GitRepository) { o.Spec.Suspend = true })
	lib = waitFor(t, lib, "suspension observed", func(o *sourcev1.GitRepository) bool { return o.Status.ObservedGeneration == o.Generation })
	base := lib.DeepCopy()
	lib.Status.Artifact = secret.Status.Artifact.DeepCopy() // the other namespace's stored tarball
	if err := env.Client.Status().Patch(ctx, lib, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	app := newGitRepository(t, ns, "app", newRepo(t, map[string]string{"app.yaml": "kind: ConfigMap\n"}).URL(), func(o *sourcev1.GitRepository) {
		o.Spec.Include = []sourcev1.GitRepositoryInclude{{GitRepositoryRef: meta.LocalObjectReference{Name: "lib"}, ToPath: "lib"}}
	})
	got := waitNotReady(t, app)
	c := apimeta.FindStatusCondition(got.Status.Conditions, sourcev1.IncludeUnavailableCondition)
	if c == nil || !strings.Contains(c.Message, "include 'lib': artifact not published by source-controller") {
		t.Fatalf("IncludeUnavailable: %+v", c)
	}
	if got.Status.Artifact != nil {
		t.Errorf("an artifact was stored from a forged include: %+v", got.Status.Artifact)
	}
}
