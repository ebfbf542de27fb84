package e2e

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var hour = metav1.Duration{Duration: time.Hour}

// gitRepository creates a GitRepository of a new repository holding files
// in namespace ns and waits for its artifact.
func gitRepository(t *testing.T, ns string, files map[string]string) (*sourcev1.GitRepository, *testenv.Repo) {
	t.Helper()
	r := gitSrv.NewRepo(t, files)
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "monorepo", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.URL(), Interval: hour,
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "an artifact", func() bool { return src.Status.Artifact != nil })
	return src, r
}

func generator(t *testing.T, ns string, sources []swv1.SourceReference, outs ...swv1.OutputArtifact) *swv1.ArtifactGenerator {
	t.Helper()
	ag := &swv1.ArtifactGenerator{ObjectMeta: metav1.ObjectMeta{Name: "gen", Namespace: ns},
		Spec: swv1.ArtifactGeneratorSpec{Sources: sources, OutputArtifacts: outs}}
	if err := env.Client.Create(ctx, ag); err != nil {
		t.Fatal(err)
	}
	return ag
}

func copyOp(from, to string) []swv1.CopyOperation { return []swv1.CopyOperation{{From: from, To: to}} }

// download fetches url and returns the sha256 digest of its body.
func download(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// TestGeneratedArtifactIsApplied: a monorepo's GitRepository, served by the
// built source-controller, is split by the built source-watcher into two
// ExternalArtifacts (Flux's decomposition example); the built
// kustomize-controller with the ExternalArtifact gate applies one. A
// generated ExternalArtifact deleted by hand comes back; a commit reaches
// the cluster through the chain of watches; an artifact dropped from the
// spec, then the generator, take their ExternalArtifacts with them.
func TestGeneratedArtifactIsApplied(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "sw-")
	src, repo := gitRepository(t, ns, map[string]string{
		"deploy/frontend/cm.yaml": configMap("frontend", "  v: \"1\"\n"),
		"deploy/backend/cm.yaml":  configMap("backend", "  v: \"1\"\n"),
	})
	ag := generator(t, ns, []swv1.SourceReference{{Alias: "repo", Kind: sourcev1.GitRepositoryKind, Name: src.Name}},
		swv1.OutputArtifact{Name: "frontend", OriginRevision: "@repo", Copy: copyOp("@repo/deploy/frontend/**", "@artifact/")},
		swv1.OutputArtifact{Name: "backend", Revision: "@repo", Copy: copyOp("@repo/deploy/backend/**", "@artifact/")})
	waitFor(t, ag, "Ready", func() bool { c := readyCondition(ag); return c != nil && c.Status == metav1.ConditionTrue })
	if c := readyCondition(ag); c.Reason != meta.SucceededReason || c.Message != "reconciliation succeeded, generated 2 artifact(s)" {
		t.Errorf("Ready %s %q", c.Reason, c.Message)
	}
	if len(ag.Status.Inventory) != 2 || !strings.HasPrefix(ag.Status.ObservedSourcesDigest, "sha256:") {
		t.Errorf("inventory %+v, sources digest %q", ag.Status.Inventory, ag.Status.ObservedSourcesDigest)
	}

	fe := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frontend"}}
	waitFor(t, fe, "an artifact", func() bool { return fe.Status.Artifact != nil })
	a := fe.Status.Artifact
	if a.Revision != "latest@"+a.Digest || a.Metadata[swv1.OriginRevisionKey] != src.Status.Artifact.Revision {
		t.Errorf("frontend artifact revision %q, origin %q (git %q)", a.Revision, a.Metadata[swv1.OriginRevisionKey], src.Status.Artifact.Revision)
	}
	if ref := fe.Spec.SourceRef; ref == nil || ref.Kind != swv1.ArtifactGeneratorKind || ref.Name != ag.Name || ref.APIVersion != swv1.GroupVersion.String() {
		t.Errorf("sourceRef %+v", ref)
	}
	if fe.Labels[swv1.GeneratorLabel] != string(ag.UID) || !apimeta.IsStatusConditionTrue(fe.Status.Conditions, meta.ReadyCondition) {
		t.Errorf("labels %v, conditions %+v", fe.Labels, fe.Status.Conditions)
	}
	if got := download(t, a.URL); got != a.Digest {
		t.Errorf("served bytes have digest %s, the status says %s", got, a.Digest)
	}
	be := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backend"}}
	waitFor(t, be, "an artifact", func() bool { return be.Status.Artifact != nil })
	if be.Status.Artifact.Revision != src.Status.Artifact.Revision {
		t.Errorf("backend revision %q, want the GitRepository's %q", be.Status.Artifact.Revision, src.Status.Artifact.Revision)
	}

	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "frontend", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: hour, Prune: true, TargetNamespace: ns, Path: "./",
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "frontend"}}}
	if err := env.Client.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k, "the ExternalArtifact applied", func() bool { return k.Status.LastAppliedRevision == a.Revision })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frontend"}}
	waitFor(t, cm, "the ConfigMap", func() bool { return cm.Data["v"] == "1" })

	// An ExternalArtifact deleted by hand is drift, generated again at once.
	uid := fe.UID
	if err := env.Client.Delete(ctx, fe); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fe, "the deleted ExternalArtifact generated again", func() bool {
		return fe.UID != uid && fe.Status.Artifact != nil && fe.Status.Artifact.Digest == a.Digest
	})

	// A commit: GitRepository (interval 1h, so a reconcile request) →
	// ArtifactGenerator → ExternalArtifact → Kustomization, by watches.
	repo.MustCommit(t, map[string]string{"deploy/frontend/cm.yaml": configMap("frontend", "  v: \"2\"\n")}, "v2")
	testenv.RequestReconcile(t, env.Client, src, func() string { return src.Status.GetLastHandledReconcileRequest() })
	waitFor(t, cm, "the commit applied", func() bool { return cm.Data["v"] == "2" })
	waitFor(t, fe, "the new revision", func() bool { return fe.Status.Artifact.Digest != a.Digest })

	base := ag.DeepCopy()
	ag.Spec.OutputArtifacts = ag.Spec.OutputArtifacts[:1]
	if err := env.Client.Patch(ctx, ag, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, be, "the ExternalArtifact dropped from the spec")
	waitFor(t, ag, "one artifact", func() bool {
		return readyCondition(ag).ObservedGeneration == ag.Generation && len(ag.Status.Inventory) == 1
	})
	if _, err := os.Stat(filepath.Join(swStorage, "externalartifact", ns, "backend")); !os.IsNotExist(err) {
		t.Errorf("the dropped artifact's files are still stored (%v)", err)
	}

	if err := env.Client.Delete(ctx, ag); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, env.Client, fe, "the generator's ExternalArtifact after its deletion")
}

// TestBadInputPublishesNothing: a missing source is Flux's
// SourceFetchFailed with the API server's stable message and retried; a
// copy of a missing file is BuildFailed; with one good and one failing
// artifact nothing is published and nothing is stored.
func TestBadInputPublishesNothing(t *testing.T) {
	ns := testenv.NewNamespace(t, env.Client, "sw-bad-")
	ag := generator(t, ns, []swv1.SourceReference{{Alias: "repo", Kind: sourcev1.GitRepositoryKind, Name: "missing"}},
		swv1.OutputArtifact{Name: "app", Copy: copyOp("@repo/deploy/**", "@artifact/")})
	waitFor(t, ag, "SourceFetchFailed", func() bool { c := readyCondition(ag); return c != nil && c.Status == metav1.ConditionFalse })
	c := readyCondition(ag)
	// The not-found error of controller-runtime's cache, which Flux's
	// source-watcher reads sources through too.
	if want := `get sources failed: GitRepository.source.toolkit.fluxcd.io "missing" not found`; c.Reason != swv1.SourceFetchFailedReason || c.Message != want {
		t.Errorf("Ready=False %s %q, want %s %q", c.Reason, c.Message, swv1.SourceFetchFailedReason, want)
	}
	if apimeta.IsStatusConditionTrue(ag.Status.Conditions, meta.StalledCondition) {
		t.Error("a missing source stalls the generator; it must be retried")
	}

	src, _ := gitRepository(t, ns, map[string]string{"deploy/cm.yaml": configMap("app", "  v: \"1\"\n")})
	base := ag.DeepCopy()
	ag.Spec.Sources[0].Name = src.Name
	ag.Spec.OutputArtifacts = []swv1.OutputArtifact{
		{Name: "good", Copy: copyOp("@repo/deploy/**", "@artifact/")},
		{Name: "bad", Copy: copyOp("@repo/missing.yaml", "@artifact/")},
	}
	if err := env.Client.Patch(ctx, ag, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ag, "BuildFailed", func() bool { c := readyCondition(ag); return c != nil && c.Reason == meta.BuildFailedReason })
	if want := "bad build failed: copy from '@repo/missing.yaml' to '@artifact/': source 'missing.yaml' does not exist"; readyCondition(ag).Message != want {
		t.Errorf("message %q, want %q", readyCondition(ag).Message, want)
	}
	var list sourcev1.ExternalArtifactList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("ExternalArtifacts published by a failing generator: %d (%v)", len(list.Items), err)
	}
	if len(ag.Status.Inventory) != 0 {
		t.Errorf("inventory of a failing generator: %+v", ag.Status.Inventory)
	}
	for _, name := range []string{"good", "bad"} {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sourcev1.ExternalArtifact{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("ExternalArtifact %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(swStorage, "externalartifact", ns)); !os.IsNotExist(err) {
		t.Errorf("the failed generator stored artifacts (%v)", err)
	}
}
