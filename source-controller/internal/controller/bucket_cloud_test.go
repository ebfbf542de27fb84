package controller

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth/cloudfake"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newSecret creates the Secret ns/name of data.
func newSecret(t testing.TB, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// newCloudBucket creates the Bucket ns/name of bucket on provider at
// endpoint, with spec.secretRef secret when not empty.
func newCloudBucket(t testing.TB, ns, name, provider, endpoint, bucket, secret string, mutate func(*sourcev1.Bucket)) *sourcev1.Bucket {
	t.Helper()
	obj := &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.BucketSpec{Provider: provider, BucketName: bucket, Endpoint: endpoint,
			Interval: metav1.Duration{Duration: time.Hour}},
	}
	if secret != "" {
		obj.Spec.SecretRef = &meta.LocalObjectReference{Name: secret}
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// bucketReadyMessage is the message of obj's Ready condition.
func bucketReadyMessage(obj *sourcev1.Bucket) string {
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition); c != nil {
		return c.Message
	}
	return ""
}

// TestBucketGCP: a gcp Bucket is read through GCS's JSON API with the
// token of spec.secretRef's service account key, or of the controller's
// identity (the metadata server); its revision is the digest of the
// objects' keys and JSON API etags; a 403 is BucketOperationFailed with
// Google's message and keeps the artifact; a Secret without
// `serviceaccount` is AuthenticationFailed.
func TestBucketGCP(t *testing.T) {
	gcs := testenv.NewGCS(t)
	t.Setenv("STORAGE_EMULATOR_HOST", gcs.Host())
	gcs.CreateBucket("app")
	index := map[string]string{}
	for k, v := range map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n", "deploy/sub dir/svc.yaml": "kind: Service\n"} {
		index[k] = gcs.Put(t, "app", k, v)
	}
	gcs.Put(t, "app", "other/x.yaml", "outside the prefix")
	ns := newNamespace(t)
	newSecret(t, ns, "sa", map[string]string{"serviceaccount": string(gcs.ServiceAccountKey())})
	obj := newCloudBucket(t, ns, "key", sourcev1.BucketProviderGoogle, "storage.googleapis.com", "app", "sa",
		func(b *sourcev1.Bucket) { b.Spec.Prefix = "deploy/" })
	got := waitBucket(t, obj, "Ready", bucketReady)
	if got.Status.Artifact.Revision != bucketRevisionOf(index) {
		t.Errorf("revision %s, want %s", got.Status.Artifact.Revision, bucketRevisionOf(index))
	}
	files := untar(t, download(t, got.Status.Artifact))
	if strings.Join(keys(files), ",") != "deploy/cm.yaml,deploy/sub dir/svc.yaml" || string(files["deploy/cm.yaml"]) != "kind: ConfigMap\n" {
		t.Errorf("artifact files %v", keys(files))
	}

	gcs.Deny("app", true)
	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.Prefix = "" })
	failed := waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	want := "failed to confirm existence of 'app' bucket: googleapi: Error 403: " + gcs.Email +
		" does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist)., forbidden"
	if m := bucketReadyMessage(failed); m != want {
		t.Errorf("denied: Ready message %q, want %q", m, want)
	}
	if failed.Status.Artifact == nil || failed.Status.Artifact.Digest != got.Status.Artifact.Digest {
		t.Errorf("denied: artifact %v, want the last one", failed.Status.Artifact)
	}
	gcs.Deny("app", false)

	md := cloudfake.StartGCEMetadata("ya29.controller")
	defer md.Close()
	t.Setenv("GCE_METADATA_HOST", md.Host)
	gcs.Allow("ya29.controller")
	identity := newCloudBucket(t, ns, "identity", sourcev1.BucketProviderGoogle, "storage.googleapis.com", "app", "", nil)
	waitBucket(t, identity, "Ready", bucketReady)
	if md.Issued() == 0 {
		t.Errorf("no token asked of the metadata server")
	}

	newSecret(t, ns, "nokey", map[string]string{"service-account.json": "{}"})
	bad := newCloudBucket(t, ns, "nokey", sourcev1.BucketProviderGoogle, "storage.googleapis.com", "app", "nokey", nil)
	f := waitBucket(t, bad, "AuthenticationFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason))
	if m := bucketReadyMessage(f); m != "invalid 'nokey' secret data: required fields 'serviceaccount'" {
		t.Errorf("missing key: Ready message %q", m)
	}
}

// TestBucketAzure: an azure Bucket is read through Blob Storage's REST API
// (the listing paged) with spec.secretRef's accountKey (Shared Key,
// checked by the fake), sasKey, or service principal (a token of its
// Entra ID at authorityHost); the revision is the digest of the keys and
// Get Blob's etags; a wrong key is BucketOperationFailed with Flux's
// message and keeps the artifact; a Secret of no known key is
// AuthenticationFailed.
func TestBucketAzure(t *testing.T) {
	az := testenv.NewAzureBlob(t)
	az.CreateContainer("app", false)
	index := map[string]string{}
	for k, v := range map[string]string{"a.yaml": "a: 1\n", "b/b.yaml": "b: 1\n", "c/c d.yaml": "c: 1\n"} {
		index[k] = az.Put("app", k, v)
	}
	ns := newNamespace(t)
	newSecret(t, ns, "key", map[string]string{"accountKey": az.Key})
	obj := newCloudBucket(t, ns, "key", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "key", nil)
	got := waitBucket(t, obj, "Ready", bucketReady)
	if got.Status.Artifact.Revision != bucketRevisionOf(index) {
		t.Errorf("revision %s, want %s", got.Status.Artifact.Revision, bucketRevisionOf(index))
	}
	files := untar(t, download(t, got.Status.Artifact))
	if strings.Join(keys(files), ",") != "a.yaml,b/b.yaml,c/c d.yaml" || string(files["c/c d.yaml"]) != "c: 1\n" {
		t.Errorf("artifact files %v", keys(files))
	}
	same := requestBucketReconcile(t, obj)
	if same.Status.Artifact.Digest != got.Status.Artifact.Digest {
		t.Errorf("unchanged blobs: a new artifact")
	}

	newSecret(t, ns, "sas", map[string]string{"sasKey": az.SAS(t)})
	sas := newCloudBucket(t, ns, "sas", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "sas", nil)
	if b := waitBucket(t, sas, "Ready", bucketReady); b.Status.Artifact.Revision != bucketRevisionOf(index) {
		t.Errorf("sasKey: revision %s", b.Status.Artifact.Revision)
	}
	newSecret(t, ns, "sp", map[string]string{"tenantId": az.TenantID, "clientId": az.ClientID, "clientSecret": az.ClientSecret,
		"authorityHost": az.AuthorityHost()})
	sp := newCloudBucket(t, ns, "sp", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "sp", nil)
	waitBucket(t, sp, "Ready", bucketReady)

	newSecret(t, ns, "wrong", map[string]string{"accountKey": "d3Jvbmcta2V5"})
	update(t, obj, func(b *sourcev1.Bucket) { b.Spec.SecretRef.Name = "wrong" })
	failed := waitBucket(t, obj, "FetchFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.BucketOperationFailedReason))
	want := "failed to confirm existence of 'app' bucket: the specified bucket name may be incorrect, nonexistent, or the caller " +
		"might lack sufficient permissions to access it: 403 AuthenticationFailed: Server failed to authenticate the request. " +
		"Make sure the value of Authorization header is formed correctly including the signature."
	if m := bucketReadyMessage(failed); m != want {
		t.Errorf("wrong key: Ready message %q, want %q", m, want)
	}
	if failed.Status.Artifact == nil || failed.Status.Artifact.Digest != got.Status.Artifact.Digest {
		t.Errorf("wrong key: artifact %v, want the last one", failed.Status.Artifact)
	}

	newSecret(t, ns, "none", map[string]string{"password": "x"})
	none := newCloudBucket(t, ns, "none", sourcev1.BucketProviderAzure, az.Endpoint(), "app", "none", nil)
	f := waitBucket(t, none, "AuthenticationFailed", bucketFailed(sourcev1.FetchFailedCondition, sourcev1.AuthenticationFailedReason))
	if m := bucketReadyMessage(f); !strings.HasPrefix(m, "invalid 'none' secret data: requires a 'clientId' or 'accountKey' field") {
		t.Errorf("no known key: Ready message %q", m)
	}
}

// TestAzureAccountAndSAS: the account name is the host's first label, or
// for an IP address the path's first segment (Azurite); sasKey's query is
// merged with the endpoint's, its values winning; a bad accountKey or an
// unsupported key set is refused without the Secret's values.
func TestAzureAccountAndSAS(t *testing.T) {
	for in, want := range map[string]string{"https://acct.blob.core.windows.net": "acct",
		"http://127.0.0.1:10000/devstore": "devstore", "https://x.example": ""} {
		u, _ := url.Parse(in)
		got, err := azureAccountName(u)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%s: account %q (%v), want %q", in, got, err, want)
		}
	}
	secret := func(data map[string]string) *bucketCredentials {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return &bucketCredentials{secret: s}
	}
	a, err := newAzureBucket(context.Background(), "https://acct.blob.core.windows.net/?sv=old&x=1",
		secret(map[string]string{"sasKey": "?sv=new&sig=c2ln"}))
	if err != nil || a.sas.Encode() != "sig=c2ln&sv=new&x=1" || a.account.String() != "https://acct.blob.core.windows.net" {
		t.Errorf("SAS merged: %v, account %v (%v)", a.sas, a.account, err)
	}
	for data, want := range map[string]string{
		"not base64!":    "invalid 's' secret data: 'accountKey' is not base64",
		"clientCertPEM!": "'s' secret: client certificate and managed identity authentication are not supported by Eddy yet: use clientSecret, accountKey or sasKey",
	} {
		key := "accountKey"
		if data == "clientCertPEM!" {
			key = "clientCertificate"
		}
		_, err := newAzureBucket(context.Background(), "https://acct.blob.core.windows.net", secret(map[string]string{key: data, "tenantId": "t", "clientId": "c"}))
		if err == nil || err.Error() != want || strings.Contains(err.Error(), data) {
			t.Errorf("%s: error %v, want %q", key, err, want)
		}
	}
	if _, err := gcsKeySource(context.Background(), nil, []byte("private: secret")); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("service account key not JSON: error %v", err)
	}
}
