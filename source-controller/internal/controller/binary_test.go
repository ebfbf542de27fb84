package controller

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryBootstrappedRepository runs the built source-controller, its
// manager made by NewManager as in the in-process tests, on a GitRepository
// of a real repository that carries CRDs (flux2-kustomize-helm-example with
// Eddy's CRDs where `flux bootstrap` writes Flux's components): the
// artifact is produced, served with its digest, and holds the CRDs and only
// what the repository's .sourceignore keeps.
func TestBinaryBootstrappedRepository(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=binary", "--storage-path="+filepath.Join(data, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")

	ns := newNamespace(t)
	r := newRepo(t, nil)
	crds, err := testenv.BootstrappedRepo(testenv.TestdataDir(t), "flux2-kustomize-helm-example-v2.6", "production", r.Work)
	if err != nil {
		t.Fatal(err)
	}
	head := r.MustCommit(t, map[string]string{}, "bootstrap")
	obj := newGitRepository(t, ns, "flux-system", r.URL(), func(o *sourcev1.GitRepository) {
		o.Labels = map[string]string{shardKey: "binary"}
	})
	got := waitReady(t, obj)
	if got.Status.Artifact.Revision != "main@sha1:"+head {
		t.Errorf("artifact revision %s, want main@sha1:%s", got.Status.Artifact.Revision, head)
	}
	if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
		t.Errorf("artifact URL %s is not the binary's file server", got.Status.Artifact.URL)
	}
	files := untar(t, download(t, got.Status.Artifact))
	components := files["clusters/production/flux-system/gotk-components.yaml"]
	for _, name := range crds {
		if !bytes.Contains(components, []byte("name: "+name+"\n")) {
			t.Errorf("the artifact's gotk-components.yaml lacks the CRD %s", name)
		}
	}
	for name := range files {
		if top, _, _ := strings.Cut(name, "/"); top != "apps" && top != "clusters" && top != "infrastructure" {
			t.Errorf("%s is in the artifact; the repository's .sourceignore keeps only apps/, clusters/ and infrastructure/", name)
		}
	}
	// The in-process reconciler left the binary's object alone.
	cur := &sourcev1.GitRepository{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(cur.Status.Artifact.URL, "http://"+storage.AdvAddr+"/") {
		t.Errorf("artifact URL %s is the in-process reconciler's", cur.Status.Artifact.URL)
	}
}

// TestBinaryBucket runs the built source-controller on Buckets of an
// S3-compatible store: the artifact of the objects is produced with the
// index revision and served by the binary's file server; a changed object
// gives a new revision, wrong credentials fail with Flux's condition while
// the artifact stays, and workload identity is refused (Stalled).
func TestBinaryBucket(t *testing.T) {
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"=binary-bucket", "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	objects := map[string]string{"deploy/cm.yaml": s3.Put(t, "app", "deploy/cm.yaml", "kind: ConfigMap\n")} // key → etag
	ns := newNamespace(t)
	shard := func(b *sourcev1.Bucket) { b.Labels = map[string]string{shardKey: "binary-bucket"} }
	obj := newBucket(t, s3, ns, "app", "app", shard)
	got := waitBucket(t, obj, "Ready", bucketReady)
	if got.Status.Artifact.Revision != bucketRevisionOf(objects) {
		t.Errorf("revision %s, want %s", got.Status.Artifact.Revision, bucketRevisionOf(objects))
	}
	if !strings.HasPrefix(got.Status.Artifact.URL, fmt.Sprintf("http://127.0.0.1:%d/bucket/", port)) {
		t.Errorf("artifact URL %s is not the binary's file server", got.Status.Artifact.URL)
	}
	if files := untar(t, download(t, got.Status.Artifact)); string(files["deploy/cm.yaml"]) != "kind: ConfigMap\n" {
		t.Errorf("artifact files %v", keys(files))
	}

	objects["deploy/cm.yaml"] = s3.Put(t, "app", "deploy/cm.yaml", "kind: ConfigMap\nmetadata: {name: x}\n")
	changed := requestBucketReconcile(t, obj)
	if changed.Status.Artifact.Revision != bucketRevisionOf(objects) {
		t.Errorf("changed object: revision %s, want %s", changed.Status.Artifact.Revision, bucketRevisionOf(objects))
	}

	newBucketSecret(t, ns, "wrong", "not-a-key", "not-a-secret")
	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "wrong" })
	failed := waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	if failed.Status.Artifact == nil || failed.Status.Artifact.Digest != changed.Status.Artifact.Digest {
		t.Errorf("wrong credentials: artifact %v, want the last one", failed.Status.Artifact)
	}
	download(t, failed.Status.Artifact)

	identity := newBucket(t, s3, ns, "identity", "app", func(b *sourcev1.Bucket) {
		shard(b)
		b.Spec.ServiceAccountName = "reader"
		b.Spec.SecretRef = nil
		b.Spec.Provider = "aws"
	})
	waitBucket(t, identity, "Stalled", bucketFailed(meta.StalledCondition, meta.FeatureGateDisabledReason))
}
