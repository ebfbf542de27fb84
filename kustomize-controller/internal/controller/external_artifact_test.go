package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact/artifacttest"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// externalShard is the shard of the binary started with the
// ExternalArtifact gate on.
const externalShard = "external"

// startExternalArtifactBinary runs the built kustomize-controller with
// --feature-gates=ExternalArtifact=true on the shard externalShard.
func startExternalArtifactBinary(t *testing.T) {
	t.Helper()
	work := t.TempDir()
	exe, err := testenv.BuildController("kustomize-controller", work)
	if err != nil {
		t.Fatal(err)
	}
	p, err := testenv.StartController(env, exe, filepath.Join(work, "kustomize-controller.log"),
		"--watch-label-selector="+shardKey+"="+externalShard, "--feature-gates=ExternalArtifact=true",
		"--requeue-dependency=1s", "--min-retry-delay=200ms", "--max-retry-delay=2s", "--http-retry=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() || os.Getenv("EDDY_TEST_LOGS") != "" {
			b, _ := os.ReadFile(p.LogPath)
			t.Logf("kustomize-controller log:\n%s", b)
		}
	})
}

// newExternalArtifact creates an ExternalArtifact and writes its status,
// as the third-party controller that owns it would: an artifact at url
// with digest and a Ready condition.
func newExternalArtifact(t *testing.T, ns, name, url, digest string, size int64) *sourcev1.ExternalArtifact {
	t.Helper()
	ctx := context.Background()
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(ctx, ea); err != nil {
		t.Fatal(err)
	}
	ea.Status.Artifact = &meta.Artifact{Path: name + ".tar.gz", URL: url, Revision: "v1@" + digest,
		Digest: digest, Size: &size, LastUpdateTime: metav1.Now()}
	ea.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: meta.SucceededReason, Message: "stored", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, ea); err != nil {
		t.Fatal(err)
	}
	return ea
}

// serveTarGz serves one manifest as a tar.gz and returns its URL and digest.
func serveTarGz(t *testing.T, manifest string) (url, digest string, size int64) {
	t.Helper()
	body := artifacttest.TarGz(t, artifacttest.Entry{Name: "cm.yaml", Content: manifest})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(body)
	return srv.URL + "/a.tar.gz", "sha256:" + hex.EncodeToString(sum[:]), int64(len(body))
}

func externalKustomization(t *testing.T, ns, name, shard string) *kustomizev1.Kustomization {
	return newKustomization(t, ns, name, name, func(k *kustomizev1.Kustomization) {
		k.Labels = map[string]string{shardKey: shard}
		k.Spec.SourceRef.Kind = sourcev1.ExternalArtifactKind
	})
}

// TestBinaryExternalArtifactApplied: with the gate on, an ExternalArtifact's
// unsigned artifact is fetched, checked against its digest and applied; a
// digest the bytes do not match is never applied.
func TestBinaryExternalArtifactApplied(t *testing.T) {
	startExternalArtifactBinary(t)
	ns := newNamespace(t)
	url, digest, size := serveTarGz(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-external, namespace: "+ns+"}\ndata: {a: \"1\"}\n")

	ea := newExternalArtifact(t, ns, "good", url, digest, size)
	k := externalKustomization(t, ns, "good", externalShard)
	waitApplied(t, k, ea.Status.Artifact.Revision)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "from-external"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the ExternalArtifact's ConfigMap: %v", err)
	}

	wrong := "sha256:" + fmt.Sprintf("%064x", 0)
	newExternalArtifact(t, ns, "wrong", url, wrong, size)
	bad := externalKustomization(t, ns, "wrong", externalShard)
	c := waitFailed(t, bad, meta.ArtifactFailedReason)
	if want := "Source is not ready, artifact digest changed, retrying in 1s"; c.Message != want {
		t.Errorf("wrong digest: %q, want %q", c.Message, want)
	}
	if bad.Status.LastAppliedRevision != "" {
		t.Errorf("wrong digest applied revision %q", bad.Status.LastAppliedRevision)
	}
}

// TestBinaryExternalArtifactGateOff: without the gate (the default, as
// Flux) a sourceRef to an ExternalArtifact is refused with Flux's message.
func TestBinaryExternalArtifactGateOff(t *testing.T) {
	ns := newNamespace(t)
	url, digest, size := serveTarGz(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: off, namespace: "+ns+"}\n")
	newExternalArtifact(t, ns, "off", url, digest, size)
	k := externalKustomization(t, ns, "off", binaryShard)
	c := waitFailed(t, k, kustomizev1.AccessDeniedReason)
	if want := "can't access 'ExternalArtifact/" + ns + "/off', ExternalArtifact feature gate is disabled"; c.Message != want {
		t.Errorf("gate off: %q, want %q", c.Message, want)
	}
	waitFor(t, k, "Stalled", func() bool { return apimeta.IsStatusConditionTrue(k.Status.Conditions, meta.StalledCondition) })
}
