package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runBucketBinaries runs the built source-controller and
// kustomize-controller on the objects of shard.
func runBucketBinaries(t *testing.T, shard string) {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunController(t, env, ControllerName,
		"--watch-label-selector="+shardKey+"="+shard, "--storage-path="+filepath.Join(t.TempDir(), "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), "--min-retry-delay=100ms", "--max-retry-delay=2s")
	testenv.RunController(t, env, "kustomize-controller",
		"--watch-label-selector="+shardKey+"="+shard, "--min-retry-delay=100ms", "--max-retry-delay=2s")
}

// appManifest is the ConfigMap "app" of ns at version v.
func appManifest(ns, v string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  version: %q\n", ns, v)
}

// newBucketKustomization creates the Kustomization ns/name applying the
// Bucket name.
func newBucketKustomization(t *testing.T, ns, name, shard string) *kustomizev1.Kustomization {
	t.Helper()
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{shardKey: shard}},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./", Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.BucketKind, Name: name}},
	}
	if err := env.Client.Create(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestBinaryBucketGCPFeedsKustomization runs the built source-controller
// and kustomize-controller on a gcp Bucket (a service account key, GCS at
// STORAGE_EMULATOR_HOST) and a Kustomization applying it: the object is
// applied, a changed object is applied at the new revision; access denied
// fails the Bucket with Flux's reason and Google's message while the
// artifact and the applied object stay; a Bucket without a Secret reads
// with the controller's identity (the metadata server).
func TestBinaryBucketGCPFeedsKustomization(t *testing.T) {
	const shard = "bucket-gcp-binary"
	gcs := testenv.NewGCS(t)
	md := cloudfake.StartGCEMetadata("ya29.binary")
	defer md.Close()
	gcs.Allow("ya29.binary")
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	t.Setenv("GCE_METADATA_HOST", md.Host)
	runBucketBinaries(t, shard)

	ns := newNamespace(t)
	gcs.CreateBucket("app")
	etag := gcs.Put(t, "app", "app.yaml", appManifest(ns, "1"))
	newSecret(t, ns, "sa", map[string]string{"serviceaccount": string(gcs.ServiceAccountKey())})
	labels := func(b *sourcev1.Bucket) { b.Labels = map[string]string{shardKey: shard} }
	obj := newCloudBucket(t, ns, "app", sourcev1.BucketProviderGoogle, "storage.googleapis.com", "app", "sa", labels)
	ks := newBucketKustomization(t, ns, "app", shard)
	waitApplied(t, ks, bucketRevisionOf(map[string]string{"app.yaml": etag}), "1")

	etag = gcs.Put(t, "app", "app.yaml", appManifest(ns, "2"))
	rev := bucketRevisionOf(map[string]string{"app.yaml": etag})
	if got := requestBucketReconcile(t, obj); got.Status.Artifact.Revision != rev {
		t.Fatalf("changed object: revision %s, want %s", got.Status.Artifact.Revision, rev)
	}
	waitApplied(t, ks, rev, "2")

	gcs.Deny("app", true)
	got := requestBucketReconcile(t, obj)
	if !bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason)(got) ||
		!strings.HasPrefix(bucketReadyMessage(got), "failed to confirm existence of 'app' bucket: googleapi: Error 403: ") ||
		strings.Contains(bucketReadyMessage(got), "PRIVATE KEY") {
		t.Errorf("access denied: conditions %+v", got.Status.Conditions)
	}
	if got.Status.Artifact == nil || got.Status.Artifact.Revision != rev {
		t.Errorf("access denied: artifact %v, want the last one", got.Status.Artifact)
	}
	download(t, got.Status.Artifact)
	if v := configMapVersion(t, ns); v != "2" {
		t.Errorf("access denied: ConfigMap version %s, want 2 kept", v)
	}
	gcs.Deny("app", false)

	identity := newCloudBucket(t, ns, "identity", sourcev1.BucketProviderGoogle, "storage.googleapis.com", "app", "", labels)
	if b := waitBucket(t, identity, "Ready", bucketReady); b.Status.Artifact.Revision != rev {
		t.Errorf("controller identity: revision %s, want %s", b.Status.Artifact.Revision, rev)
	}
}

// TestBinaryBucketAzureFeedsKustomization runs the built source-controller
// and kustomize-controller on an azure Bucket (Shared Key) and a
// Kustomization applying it; then the same container through a SAS token
// and a service principal; a wrong account key fails with Flux's message
// and keeps the artifact; a Secret of no known key is AuthenticationFailed.
func TestBinaryBucketAzureFeedsKustomization(t *testing.T) {
	const shard = "bucket-azure-binary"
	runBucketBinaries(t, shard)
	az := testenv.NewAzureBlob(t)
	az.CreateContainer("app", false)
	ns := newNamespace(t)
	index := map[string]string{"app.yaml": az.Put("app", "app.yaml", appManifest(ns, "1"))}
	labels := func(b *sourcev1.Bucket) { b.Labels = map[string]string{shardKey: shard} }
	newSecret(t, ns, "key", map[string]string{"accountKey": az.Key})
	obj := newCloudBucket(t, ns, "app", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "key", labels)
	ks := newBucketKustomization(t, ns, "app", shard)
	waitApplied(t, ks, bucketRevisionOf(index), "1")

	index["app.yaml"] = az.Put("app", "app.yaml", appManifest(ns, "2"))
	requestBucketReconcile(t, obj)
	waitApplied(t, ks, bucketRevisionOf(index), "2")

	newSecret(t, ns, "sas", map[string]string{"sasKey": az.SAS(t)})
	newSecret(t, ns, "sp", map[string]string{"tenantId": az.TenantID, "clientId": az.ClientID, "clientSecret": az.ClientSecret,
		"authorityHost": az.AuthorityHost()})
	for _, name := range []string{"sas", "sp"} {
		b := waitBucket(t, newCloudBucket(t, ns, name, sourcev1.BucketProviderAzure, az.Endpoint(), "app", name, labels), "Ready", bucketReady)
		if b.Status.Artifact.Revision != bucketRevisionOf(index) {
			t.Errorf("%s: revision %s, want %s", name, b.Status.Artifact.Revision, bucketRevisionOf(index))
		}
	}

	newSecret(t, ns, "wrong", map[string]string{"accountKey": "d3Jvbmcta2V5"})
	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "wrong" })
	got := waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	if m := bucketReadyMessage(got); !strings.HasSuffix(m, "403 AuthenticationFailed: Server failed to authenticate the request. "+
		"Make sure the value of Authorization header is formed correctly including the signature.") || strings.Contains(m, az.Key) {
		t.Errorf("wrong key: Ready message %q", m)
	}
	if got.Status.Artifact == nil || got.Status.Artifact.Revision != bucketRevisionOf(index) {
		t.Errorf("wrong key: artifact %v, want the last one", got.Status.Artifact)
	}

	newSecret(t, ns, "none", map[string]string{"password": "x"})
	none := newCloudBucket(t, ns, "none", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "none", labels)
	f := waitBucket(t, none, "AuthenticationFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason))
	if m := bucketReadyMessage(f); !strings.HasPrefix(m, "invalid 'none' secret data: requires a 'clientId' or 'accountKey' field") {
		t.Errorf("no known key: Ready message %q", m)
	}
}

// TestBinaryBucketAWSSTS runs the built source-controller on an aws Bucket
// with spec.sts (aws): the controller's web identity token (IRSA's file)
// is exchanged at spec.sts.endpoint (a fake STS behind AWS's name, reached
// through spec.proxySecretRef's proxy) for the temporary credentials the
// store takes; an STS endpoint that is not AWS's is AuthenticationFailed,
// as Flux's, and the token is not sent to it.
func TestBinaryBucketAWSSTS(t *testing.T) {
	const shard = "bucket-sts-binary"
	s3 := testenv.NewS3(t)
	s3.CreateBucket(t, "app")
	index := map[string]string{"a.yaml": s3.Put(t, "app", "a.yaml", "a: 1\n")}
	sts := cloudfake.StartAWS("unused")
	defer sts.Close()
	sts.WebIdentityToken = "irsa-token"
	s3.AllowKey(sts.SessionKeyID)
	proxy := testenv.NewAWSProxy(t, sts.URL)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("irsa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/eddy-reader",
		"AWS_CA_BUNDLE": proxy.CAFile, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_STS": ""} {
		t.Setenv(k, v)
	}
	runBucketBinaries(t, shard)

	ns := newNamespace(t)
	newSecret(t, ns, "proxy", map[string]string{"address": proxy.URL})
	withSTS := func(endpoint string) func(*sourcev1.Bucket) {
		return func(b *sourcev1.Bucket) {
			b.Labels = map[string]string{shardKey: shard}
			b.Spec.Insecure, b.Spec.Region = true, "us-east-1"
			b.Spec.STS = &sourcev1.BucketSTSSpec{Provider: sourcev1.STSProviderAmazon, Endpoint: endpoint}
			b.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: "proxy"}
		}
	}
	obj := newCloudBucket(t, ns, "sts", sourcev1.BucketProviderAmazon, s3.Endpoint(), "app", "", withSTS("https://sts.us-east-1.amazonaws.com"))
	if got := waitBucket(t, obj, "Ready", bucketReady); got.Status.Artifact.Revision != bucketRevisionOf(index) {
		t.Errorf("revision %s, want %s", got.Status.Artifact.Revision, bucketRevisionOf(index))
	}

	other := newCloudBucket(t, ns, "elsewhere", sourcev1.BucketProviderAmazon, s3.Endpoint(), "app", "", withSTS("https://sts.example.com"))
	got := waitBucket(t, other, "AuthenticationFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason))
	if m := bucketReadyMessage(got); !strings.HasPrefix(m, "AWS authentication failed: invalid STS endpoint: 'https://sts.example.com'. must match ") {
		t.Errorf("STS endpoint not AWS's: Ready message %q", m)
	}
}
