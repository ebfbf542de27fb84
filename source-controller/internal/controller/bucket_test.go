package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newBucketSecret creates the Secret ns/name of S3 credentials.
func newBucketSecret(t testing.TB, ns, name, accessKey, secretKey string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{"accesskey": accessKey, "secretkey": secretKey}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// newBucket creates the Bucket ns/name of bucket on s3, with the Secret
// ns/<name>-creds of the store's credentials.
func newBucket(t testing.TB, s3 *testenv.S3, ns, name, bucket string, mutate func(*sourcev1.Bucket)) *sourcev1.Bucket {
	t.Helper()
	newBucketSecret(t, ns, name+"-creds", s3.AccessKey, s3.SecretKey)
	obj := &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.BucketSpec{BucketName: bucket, Endpoint: s3.Endpoint(), Insecure: true, Region: "us-east-1",
			Interval: metav1.Duration{Duration: time.Hour}, SecretRef: &meta.LocalObjectReference{Name: name + "-creds"}},
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// waitBucket reads the Bucket until cond holds and returns what it read.
func waitBucket(t testing.TB, obj *sourcev1.Bucket, what string, cond func(*sourcev1.Bucket) bool) *sourcev1.Bucket {
	t.Helper()
	got := &sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	testenv.WaitFor(t, env.Client, got, what, func() bool { return cond(got) })
	return got
}

// bucketReady is true when the current generation was reconciled to Ready=True.
func bucketReady(o *sourcev1.Bucket) bool {
	c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == o.Generation && o.Status.ObservedGeneration == o.Generation
}

// bucketFailed is true when condition typ is True with reason at the current generation.
func bucketFailed(typ, reason string) func(*sourcev1.Bucket) bool {
	return func(o *sourcev1.Bucket) bool {
		c := apimeta.FindStatusCondition(o.Status.Conditions, typ)
		r := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && c.ObservedGeneration == o.Generation &&
			r != nil && r.Status == metav1.ConditionFalse
	}
}

// bucketRevisionOf is Flux's revision of an object index: sha256 of the
// lines `<key> <etag>\n` in key order.
func bucketRevisionOf(index map[string]string) string {
	keys := make([]string, 0, len(index))
	for k := range index {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, index[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestBucketArtifactHoldsTheObjectsItsRevisionDigests: the artifact holds
// the objects under spec.prefix minus what the bucket's .sourceignore and
// spec.ignore exclude (the .sourceignore itself kept, as Flux), the
// revision is the digest of their keys and etags, the file is
// `<hex>.tar.gz`, and a NewArtifact event names the count and bucket.
func TestBucketArtifactHoldsTheObjectsItsRevisionDigests(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "manifests")
	index := map[string]string{}
	for k, v := range map[string]string{"apps/deploy.yaml": "kind: Deployment\n", "apps/svc.yaml": "kind: Service\n",
		"apps/sub/cm.yaml": "kind: ConfigMap\n"} {
		index[k] = s3.Put(t, "manifests", k, v)
	}
	s3.Put(t, "manifests", "apps/notes.txt", "ignored by .sourceignore")
	s3.Put(t, "manifests", "apps/secret.enc", "ignored by spec.ignore")
	s3.Put(t, "manifests", "other/outside.yaml", "outside the prefix")
	s3.Put(t, "manifests", ".sourceignore", "*.txt\n")
	ns := newNamespace(t)
	ignore := "*.enc\n"
	obj := newBucket(t, s3, ns, "b", "manifests", func(b *sourcev1.Bucket) { b.Spec.Prefix = "apps/"; b.Spec.Ignore = &ignore })
	got := waitBucket(t, obj, "Ready", bucketReady)

	want := bucketRevisionOf(index)
	if got.Status.Artifact.Revision != want {
		t.Errorf("revision %s, want %s (digest of the index)", got.Status.Artifact.Revision, want)
	}
	if !strings.HasSuffix(got.Status.Artifact.Path, "/"+strings.TrimPrefix(want, "sha256:")+".tar.gz") {
		t.Errorf("artifact path %s, want <hex>.tar.gz", got.Status.Artifact.Path)
	}
	if got.Status.URL == "" || !strings.HasSuffix(got.Status.URL, "/bucket/"+ns+"/b/latest.tar.gz") {
		t.Errorf("status.url %q", got.Status.URL)
	}
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c.Message != "stored artifact: revision '"+want+"'" {
		t.Errorf("Ready message %q", c.Message)
	}
	if got.Status.ObservedIgnore == nil || *got.Status.ObservedIgnore != ignore {
		t.Errorf("observedIgnore %v, want %q", got.Status.ObservedIgnore, ignore)
	}
	files := untar(t, download(t, got.Status.Artifact))
	if k := keys(files); strings.Join(k, ",") != ".sourceignore,apps/deploy.yaml,apps/sub/cm.yaml,apps/svc.yaml" {
		t.Errorf("artifact files %v", k)
	}
	if string(files["apps/sub/cm.yaml"]) != "kind: ConfigMap\n" {
		t.Errorf("apps/sub/cm.yaml holds %q", files["apps/sub/cm.yaml"])
	}
	if evs := sink.find(ns, "b", "NewArtifact"); len(evs) != 1 || evs[0].Message != "stored artifact with 3 fetched files from 'manifests' bucket" ||
		evs[0].Metadata[sourcev1.GroupVersion.Group+"/revision"] != want {
		t.Errorf("NewArtifact events %+v", evs)
	}
}

// TestBucketRevisionFollowsTheObjects: a reconcile of unchanged objects
// keeps the revision and artifact; a changed object gives a new revision
// and artifact; a deleted one too.
func TestBucketRevisionFollowsTheObjects(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	s3.Put(t, "app", "a.yaml", "a: 1\n")
	s3.Put(t, "app", "b.yaml", "b: 1\n")
	ns := newNamespace(t)
	obj := newBucket(t, s3, ns, "b", "app", nil)
	first := waitBucket(t, obj, "Ready", bucketReady)

	same := requestBucketReconcile(t, obj)
	if same.Status.Artifact.Revision != first.Status.Artifact.Revision || same.Status.Artifact.Digest != first.Status.Artifact.Digest {
		t.Errorf("unchanged objects: artifact %s/%s, want %s/%s", same.Status.Artifact.Revision, same.Status.Artifact.Digest,
			first.Status.Artifact.Revision, first.Status.Artifact.Digest)
	}

	etag := s3.Put(t, "app", "a.yaml", "a: 2\n")
	changed := requestBucketReconcile(t, obj)
	want := bucketRevisionOf(map[string]string{"a.yaml": etag, "b.yaml": s3.Put(t, "app", "b.yaml", "b: 1\n")})
	if changed.Status.Artifact.Revision != want {
		t.Errorf("changed object: revision %s, want %s", changed.Status.Artifact.Revision, want)
	}
	if files := untar(t, download(t, changed.Status.Artifact)); string(files["a.yaml"]) != "a: 2\n" {
		t.Errorf("a.yaml in the new artifact: %q", files["a.yaml"])
	}

	s3.Delete(t, "app", "b.yaml")
	gone := requestBucketReconcile(t, obj)
	if gone.Status.Artifact.Revision != bucketRevisionOf(map[string]string{"a.yaml": etag}) {
		t.Errorf("deleted object: revision %s", gone.Status.Artifact.Revision)
	}
}

// requestBucketReconcile asks for a reconcile and waits until it was
// handled; it returns the object then read.
func requestBucketReconcile(t testing.TB, obj *sourcev1.Bucket) *sourcev1.Bucket {
	t.Helper()
	got := obj.DeepCopy()
	testenv.RequestReconcile(t, env.Client, got, func() string { return got.Status.LastHandledReconcileAt })
	return got
}

// TestBucketFailuresKeepTheLastArtifact: wrong credentials and a missing
// bucket are FetchFailed BucketOperationFailed with Flux's messages (no
// secret in them), the last artifact kept and served; back to the right
// credentials, Ready again with the same artifact.
func TestBucketFailuresKeepTheLastArtifact(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	s3.Put(t, "app", "a.yaml", "a: 1\n")
	ns := newNamespace(t)
	obj := newBucket(t, s3, ns, "b", "app", nil)
	ok := waitBucket(t, obj, "Ready", bucketReady)

	newBucketSecret(t, ns, "wrong", "not-a-key", "not-a-secret")
	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "wrong" })
	got := waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition)
	if c.Message != "failed to confirm existence of 'app' bucket: Access Denied." {
		t.Errorf("wrong credentials: Ready message %q", c.Message)
	}
	if strings.Contains(c.Message, "not-a-secret") || got.Status.Artifact == nil || got.Status.Artifact.Digest != ok.Status.Artifact.Digest {
		t.Errorf("wrong credentials: message %q, artifact %v; want no secret and the last artifact", c.Message, got.Status.Artifact)
	}
	download(t, got.Status.Artifact)

	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "b-creds"; b.Spec.BucketName = "missing" })
	got = waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c.Message != "bucket 'missing' not found" {
		t.Errorf("missing bucket: Ready message %q", c.Message)
	}
	if evs := sink.find(ns, "b", sourcev1.BucketOperationFailedReason); len(evs) == 0 || evs[len(evs)-1].Severity != "error" {
		t.Errorf("BucketOperationFailed events %+v; want an error", evs)
	}

	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.BucketName = "app" })
	back := waitBucket(t, obj, "Ready", bucketReady)
	if back.Status.Artifact.Digest != ok.Status.Artifact.Digest {
		t.Errorf("recovered with artifact %s, want the first %s", back.Status.Artifact.Digest, ok.Status.Artifact.Digest)
	}
	if apimeta.FindStatusCondition(back.Status.Conditions, sourcev1.FetchFailedCondition) != nil {
		t.Errorf("FetchFailed left after recovery")
	}
}

// TestBucketRefusesWhatItCannotServe: workload identity stalls with a
// message that says so; a Secret without
// Flux's keys and a missing Secret are AuthenticationFailed.
func TestBucketRefusesWhatItCannotServe(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	ns := newNamespace(t)
	for _, tc := range []struct {
		name, cond, reason, message string
		mutate                      func(*sourcev1.Bucket)
	}{
		{"identity", meta.StalledCondition, meta.FeatureGateDisabledReason,
			"spec.serviceAccountName (workload identity) is not supported by Eddy yet: use spec.secretRef",
			func(b *sourcev1.Bucket) {
				b.Spec.Provider, b.Spec.ServiceAccountName, b.Spec.SecretRef = "aws", "s3-reader", nil
			}},
		{"nosecret", sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason,
			fmt.Sprintf("failed to get secret '%s/absent': secrets \"absent\" not found", ns),
			func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "absent" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := newBucket(t, s3, ns, tc.name, "app", tc.mutate)
			got := waitBucket(t, obj, tc.cond, bucketFailed(tc.cond, tc.reason))
			if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c.Message != tc.message {
				t.Errorf("Ready message %q, want %q", c.Message, tc.message)
			}
		})
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "partial", Namespace: ns}, StringData: map[string]string{"accesskey": "x"}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	obj := newBucket(t, s3, ns, "partial", "app", func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "partial" })
	got := waitBucket(t, obj, "AuthenticationFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason))
	if c := apimeta.FindStatusCondition(got.Status.Conditions, meta.ReadyCondition); c.Message != "invalid 'partial' secret data: required fields 'accesskey' and 'secretkey'" {
		t.Errorf("partial secret: Ready message %q", c.Message)
	}
}

// TestBucketCredentialsFromTheEnvironmentAndLDAP: the aws provider without
// spec.secretRef signs with the environment's AWS credentials; the generic
// provider with spec.sts (ldap) with the temporary credentials its STS
// gives for spec.sts.secretRef's user.
func TestBucketCredentialsFromTheEnvironmentAndLDAP(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	s3.Put(t, "app", "a.yaml", "a: 1\n")
	ns := newNamespace(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	aws := newBucket(t, s3, ns, "aws", "app", func(b *sourcev1.Bucket) { b.Spec.Provider, b.Spec.SecretRef = "aws", nil })
	waitBucket(t, aws, "Ready", bucketReady)

	sts := s3.LDAPSTS(t, "reader", "ldap-password")
	ldap := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ldap", Namespace: ns},
		StringData: map[string]string{"username": "reader", "password": "ldap-password"}}
	if err := env.Client.Create(context.Background(), ldap); err != nil {
		t.Fatal(err)
	}
	obj := newBucket(t, s3, ns, "ldap", "app", func(b *sourcev1.Bucket) {
		b.Spec.SecretRef = nil
		b.Spec.STS = &sourcev1.BucketSTSSpec{Provider: "ldap", Endpoint: sts, SecretRef: &meta.LocalObjectReference{Name: "ldap"}}
	})
	waitBucket(t, obj, "Ready", bucketReady)

	anon := newBucket(t, s3, ns, "anonymous", "app", func(b *sourcev1.Bucket) { b.Spec.SecretRef = nil })
	got := waitBucket(t, anon, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	if got.Status.Artifact != nil {
		t.Errorf("an anonymous Bucket got an artifact")
	}
}

// TestHelmChartFromBucket packages podinfo's chart from a Bucket's
// artifact, as from a GitRepository's: Flux's Ready message, then
// reconcileStrategy Revision's build metadata, the first 12 hex of the
// Bucket's revision.
func TestHelmChartFromBucket(t *testing.T) {
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "charts")
	for k, v := range podinfoFiles(t, "charts/podinfo/") {
		s3.Put(t, "charts", k, v)
	}
	ns := newNamespace(t)
	b := waitBucket(t, newBucket(t, s3, ns, "charts", "charts", nil), "Ready", bucketReady)
	obj := newHelmChart(t, ns, "podinfo", func(o *sourcev1.HelmChart) {
		o.Spec.Chart = "./charts/podinfo"
		o.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.BucketKind, Name: "charts"}
	})
	got := waitChart(t, obj, "Ready", readyWith(sourcev1.ChartPackageSucceededReason, "packaged 'podinfo' chart with version '6.14.1'"))
	checkChartArtifact(t, got, "6.14.1")
	if got.Status.ObservedSourceArtifactRevision != b.Status.Artifact.Revision {
		t.Errorf("observed source revision %q, want the Bucket's %q", got.Status.ObservedSourceArtifactRevision, b.Status.Artifact.Revision)
	}
	update(t, obj, func(o *sourcev1.HelmChart) { o.Spec.ReconcileStrategy = sourcev1.ReconcileStrategyRevision })
	version := "6.14.1+" + strings.TrimPrefix(b.Status.Artifact.Revision, "sha256:")[:12]
	got = waitChart(t, obj, "Ready with Revision metadata", readyWith(sourcev1.ChartPackageSucceededReason,
		fmt.Sprintf("packaged 'podinfo' chart with version '%s'", version)))
	checkChartArtifact(t, got, version)
}
