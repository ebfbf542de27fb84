package main

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCreateSourceBucketExportIsFluxs: `eddy create source bucket
// --export` prints what `flux create source bucket --export` prints for
// the same flags (the credentials flags write no Secret, as flux's), and
// refuses what flux refuses with flux's messages; no cluster needed.
func TestCreateSourceBucketExportIsFluxs(t *testing.T) {
	u := newUser(t)
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	for _, args := range [][]string{
		{"podinfo", "--bucket-name=podinfo", "--endpoint=minio.minio.svc.cluster.local:9000", "--insecure=true",
			"--access-key=ak", "--secret-key=sk", "--interval=10m", "--region=us-east-1", "--ignore-paths=a/,*.txt"},
		{"p2", "--bucket-name=x", "--endpoint=s3.amazonaws.com", "--provider=aws", "--secret-ref=creds",
			"--proxy-secret-ref=proxy", "--fetch-timeout=30s", "--label=team=a", "-n", "apps"},
		{"p3", "--bucket-name=x", "--endpoint=storage.googleapis.com", "--provider=gcp"},
	} {
		full := append(append([]string{"create", "source", "bucket"}, args...), "--export")
		got := u.must(full...)
		want := flux.must(full)
		if got != want {
			t.Errorf("eddy %s:\n%s\nflux prints:\n%s", strings.Join(full, " "), got, want)
		}
	}
	oneLineError(t, u.fails("create", "source", "bucket", "b1", "--endpoint=e", "--export"), "bucket-name is required")
	oneLineError(t, u.fails("create", "source", "bucket", "b1", "--bucket-name=b", "--export"), "endpoint is required")
	oneLineError(t, u.fails("create", "source", "bucket", "b1", "--bucket-name=b", "--endpoint=e", "--provider=ibm", "--export"),
		"source bucket provider 'ibm' is not supported, must be one of: generic, aws, azure, gcp")
}

// bucketRevision is a Bucket's revision of objects (key → content): sha256
// of `<key> <etag>\n` in key order, the etag an object's MD5.
func bucketRevision(objects map[string]string) string {
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s %x\n", k, md5.Sum([]byte(objects[k])))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// bucketFlow is a Flux user's Bucket path against eddy dev's controllers:
// podinfo's kustomize/ uploaded to an S3-compatible store, a Bucket made by
// `eddy create source bucket` with its credentials, a Kustomization
// applying it; an unchanged bucket keeps its revision, a changed object
// is fetched and applied, wrong credentials fail the Bucket with Flux's
// condition while the applied objects stay; the real flux CLI reads it.
func bucketFlow(t *testing.T, u *user, c client.Client) {
	ctx := context.Background()
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "podinfo")
	objects := map[string]string{}
	src := filepath.Join(testenv.TestdataDir(t), "repos", "podinfo", "kustomize")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(src, p)
		objects["kustomize/"+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range objects {
		s3.Put(t, "podinfo", k, v)
	}
	rev := bucketRevision(objects)
	out := u.must("create", "source", "bucket", "podinfo-bucket", "--bucket-name=podinfo", "--endpoint="+s3.Endpoint(), "--insecure",
		"--access-key="+s3.AccessKey, "--secret-key="+s3.SecretKey, "--region=us-east-1", "--interval=1h")
	hasLines(t, out, "✚ generating Bucket source", "► applying secret with the bucket credentials", "✔ authentication configured",
		"► applying Bucket source", "✔ Bucket source created", "✔ Bucket source reconciliation completed", "✔ fetched revision: "+rev)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bucket"}}); err != nil {
		t.Fatal(err)
	}
	out = u.must("create", "ks", "podinfo-bucket", "--source=Bucket/podinfo-bucket", "--path=./kustomize", "--prune", "--target-namespace=bucket")
	hasLines(t, out, "✔ Kustomization podinfo-bucket is ready", "✔ applied revision "+rev)
	want := expectedLines(t, "podinfo/kustomize-build/kustomize/expected-objects.txt", "bucket")
	if got := inventoryLines(u.kustomization("podinfo-bucket")); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("objects applied from the Bucket:\n%s\nwant (kustomize build, namespace bucket):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hasLines(t, u.must("reconcile", "source", "bucket", "podinfo-bucket"), "✔ fetched revision "+rev)

	// A new object: a new revision, fetched and applied.
	objects["kustomize/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo-extra\ndata:\n  greeting: hello\n"
	objects["kustomize/kustomization.yaml"] = strings.Replace(objects["kustomize/kustomization.yaml"], "resources:\n", "resources:\n  - extra.yaml\n", 1)
	for _, k := range []string{"kustomize/extra.yaml", "kustomize/kustomization.yaml"} {
		s3.Put(t, "podinfo", k, objects[k])
	}
	rev2 := bucketRevision(objects)
	hasLines(t, u.must("reconcile", "ks", "podinfo-bucket", "--with-source"), "✔ fetched revision "+rev2, "✔ applied revision "+rev2)
	if err := c.Get(ctx, types.NamespacedName{Namespace: "bucket", Name: "podinfo-extra"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the ConfigMap of the new object was not applied: %v", err)
	}

	// The real flux CLI reads Eddy's Bucket.
	fluxOn := newFluxCLI(t, filepath.Join(u.dir(), "cluster", "kubeconfig"))
	fluxOn.must([]string{"get", "sources", "bucket"}, `^podinfo-bucket\s+`+rev2[:len("sha256:")+8]+`\s+False\s+True\s+stored artifact: revision`)

	// Wrong credentials: FetchFailed with Flux's reason and message, the
	// artifact and the applied objects kept.
	secret := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "bucket-podinfo-bucket"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["accesskey"] = []byte("not-a-key")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	out = u.fails("reconcile", "source", "bucket", "podinfo-bucket")
	if !strings.Contains(out, "failed to confirm existence of 'podinfo' bucket: Access Denied.") || strings.Contains(out, s3.SecretKey) {
		t.Errorf("reconcile with wrong credentials:\n%s\nwant Flux's BucketOperationFailed message, no secret", out)
	}
	b := &sourcev1.Bucket{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "flux-system", Name: "podinfo-bucket"}, b); err != nil || b.Status.Artifact == nil || b.Status.Artifact.Revision != rev2 {
		t.Errorf("after the failure: artifact %v (%v), want the last one %s", b.Status.Artifact, err, rev2)
	}
	if c := apimeta.FindStatusCondition(b.Status.Conditions, sourcev1.FetchFailedCondition); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != sourcev1.BucketOperationFailedReason {
		t.Errorf("FetchFailed %+v, want True BucketOperationFailed", c)
	}

	u.must("delete", "ks", "podinfo-bucket", "--silent")
	waitUntil(t, "the Kustomization's objects pruned", time.Minute, func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: "bucket", Name: "podinfo-extra"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), "ConfigMap bucket/podinfo-extra still there"
	})
	u.must("delete", "source", "bucket", "podinfo-bucket", "--silent")
}
