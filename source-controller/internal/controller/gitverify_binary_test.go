package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryVerifiedSourceFeedsKustomization runs the built
// source-controller and kustomize-controller on a GitRepository with
// spec.verify and a Kustomization applying it: a signed commit is applied;
// an unsigned one pushed after it is refused (SourceVerified=False) and
// the cluster keeps the verified content; the next signed commit is applied.
func TestBinaryVerifiedSourceFeedsKustomization(t *testing.T) {
	const shard = "verify-binary"
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+shard, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
	testenv.RunController(t, env, "kustomize-controller",
		"--watch-label-selector="+shardKey+"="+shard, "--min-retry-delay=100ms", "--max-retry-delay=2s")

	key, pub := newPGPKey(t, "trusted")
	ns := newNamespace(t)
	manifest := func(v string) map[string]string {
		return map[string]string{"app.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  version: %q\n", ns, v)}
	}
	r := newRepo(t, nil)
	first := commitSigned(t, r, key, manifest("1"), "signed v1")
	newKeysSecret(t, ns, "keys", map[string]string{"author.asc": pub})
	src := newGitRepository(t, ns, "app", r.URL(), func(o *sourcev1.GitRepository) {
		verifying(sourcev1.ModeGitHEAD, sourcev1.GitRepositoryRef{Branch: "main"})(o)
		o.Labels = map[string]string{shardKey: shard}
	})
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{shardKey: shard}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
	}
	if err := env.Client.Create(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, ks, "main@sha1:"+first, "1")
	got := waitReady(t, src)
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionTrue, meta.SucceededReason,
		fmt.Sprintf("verified signature of\n\t- commit '%s' with key '%s'", first, key.PrimaryKey.KeyIdString()))

	bad := commitSigned(t, r, nil, manifest("2"), "unsigned v2")
	got = requestReconcile(t, src)
	wantCondition(t, got, sourcev1.SourceVerifiedCondition, metav1.ConditionFalse, sourcev1.InvalidCommitSignatureReason,
		"signature verification of commit '"+bad+"' failed: unsupported signature type: empty")
	if a := got.Status.Artifact; a == nil || a.Revision != "main@sha1:"+first {
		t.Errorf("artifact %+v, want the verified main@sha1:%s", a, first)
	}
	testenv.RequestReconcile(t, env.Client, ks, func() string { return ks.Status.LastHandledReconcileAt })
	if ks.Status.LastAppliedRevision != "main@sha1:"+first || configMapVersion(t, ns) != "1" {
		t.Errorf("applied %s (ConfigMap version %s) after an unsigned push, want main@sha1:%s (1)",
			ks.Status.LastAppliedRevision, configMapVersion(t, ns), first)
	}

	next := commitSigned(t, r, key, manifest("3"), "signed v3")
	requestReconcile(t, src)
	waitApplied(t, ks, "main@sha1:"+next, "3")
}

// waitApplied waits until ks is Ready at revision and the ConfigMap "app"
// it applies holds version.
func waitApplied(t *testing.T, ks *kustomizev1.Kustomization, revision, version string) {
	t.Helper()
	testenv.WaitFor(t, env.Client, ks, "Kustomization applied "+revision, func() bool {
		return ks.Status.LastAppliedRevision == revision && apimeta.IsStatusConditionTrue(ks.Status.Conditions, meta.ReadyCondition)
	})
	if v := configMapVersion(t, ks.Namespace); v != version {
		t.Errorf("ConfigMap version %q at %s, want %q", v, revision, version)
	}
}

func configMapVersion(t *testing.T, ns string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["version"]
}
