package inspect_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With source-controller's signing key readable, a diff refuses a source
// artifact it did not sign (a status a tenant forged) before any request
// to its URL, and fetches the one it signed.
func TestDiffRefusesAnUnsignedArtifactWhenTheKeyIsReadable(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	key := []byte("0123456789abcdef0123456789abcdef")
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inspect.KeyNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: inspect.KeyNamespace, Name: artifact.KeySecretName},
		Data: map[string][]byte{artifact.KeySecretField: key}}
	create(t, secret)
	t.Cleanup(func() { _ = c.Delete(ctx, secret) }) // the other diff tests use unsigned artifacts

	ns := testenv.NewNamespace(t, c, "signed-")
	data, digest := artifactOf(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)

	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"},
		Spec: sourcev1.GitRepositorySpec{URL: "https://git.example/repo", Interval: metav1.Duration{Duration: time.Hour}}}
	create(t, repo)
	art := &meta.Artifact{Path: "gitrepository/" + ns + "/repo/abc.tar.gz", URL: srv.URL + "/abc.tar.gz",
		Revision: "main@sha1:abc", Digest: digest, LastUpdateTime: metav1.Now(), Size: ptrTo(int64(len(data)))}
	repo.Status.Artifact = art
	ready(t, repo, &repo.Status.Conditions, &repo.Status.ObservedGeneration)
	ks := kustomization(ns, "app")
	ks.Spec.TargetNamespace = ns
	create(t, ks)

	_, _, err := inspect.DiffKustomization(ctx, env.Config, c, ks)
	if !errors.Is(err, artifact.ErrUnsigned) {
		t.Fatalf("err = %v, want the unsigned artifact refused", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the unsigned artifact's URL got %d requests, want none", n)
	}

	repo.Status.Artifact = artifact.Sign(key, artifact.Owner{Kind: sourcev1.GitRepositoryKind, Namespace: ns, Name: "repo"}, art)
	ready(t, repo, &repo.Status.Conditions, &repo.Status.ObservedGeneration)
	if _, _, err := inspect.DiffKustomization(ctx, env.Config, c, ks); err != nil {
		t.Fatalf("the signed artifact: %v", err)
	}
}
