package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// BucketArtifactLink is the name of the link, in a Bucket's storage
// directory, to its latest artifact; status.url is its URL. Flux
// compatible.
const BucketArtifactLink = "latest.tar.gz"

// BucketReconciler turns Bucket objects into artifacts: it lists the
// bucket's objects (key and etag) into an index whose digest is the
// revision, and only when that differs from the stored artifact's
// downloads the objects and archives them as `<hex>.tar.gz`. Flux
// compatible: conditions, reasons, messages, events and revision of
// source-controller's Bucket (v1.10). The generic and aws providers are
// served through minio-go (S3), gcp and azure through Eddy's own small
// clients of their REST APIs (bucket_gcs.go, bucket_azure.go).
type BucketReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Signer signs the artifacts written to the status; nil signs none.
	Signer *Signer
	Events *events.Recorder
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
}

// SetupWithManager registers the reconciler with the work-queue options
// opts: it reconciles on creation, spec change and reconcile request.
func (r *BucketReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.Bucket{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		WithOptions(opts).
		Complete(r)
}

// Reconcile brings one Bucket's artifact up to date within the skeleton
// (finalizer, suspend, status patch).
func (r *BucketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := sourceSkeleton(r.Client, r.Storage, sourcev1.BucketKind, func(obj *sourcev1.Bucket) bool { return obj.Spec.Suspend })
	return skel.Reconcile(ctx, req, &sourcev1.Bucket{}, r.run)
}

// bucketFailConditions are the conditions whose removal is a recovery
// (Flux's bucketFailConditions).
var bucketFailConditions = []string{sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition}

// run reconciles a live, unsuspended Bucket and summarizes the outcome in
// its status. A failure is returned, retried with the work queue's
// back-off unless stalled; success requeues after spec.interval.
func (r *BucketReconciler) run(ctx context.Context, obj *sourcev1.Bucket, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	start := time.Now()
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	if err := r.Signer.ready(ctx); err != nil {
		return ctrl.Result{}, err
	}
	recErr := r.reconcile(ctx, obj, p, wasReady)
	summarizeSource(obj, r.Events, obj.Status.Artifact, "stored artifact: revision '%s'", recErr, bucketFailConditions...)
	var done string
	if recErr == nil {
		done = fmt.Sprintf("stored artifact with revision '%s'", obj.Status.Artifact.Revision)
	}
	interval := obj.Spec.Interval.Duration
	if interval <= 0 {
		interval = time.Minute
	}
	return outcome(ctrl.LoggerFrom(ctx), start, recErr, done, controllerkit.Jitter(interval, r.JitterPercent), 0)
}

// reconcile runs the storage, source and artifact steps; it records
// observations in obj.Status and returns the first failure. A failure
// leaves the stored artifact as it was.
func (r *BucketReconciler) reconcile(ctx context.Context, obj *sourcev1.Bucket, p *reconciler.StatusPatcher, wasReady bool) *reconciler.Failure {
	objDir := artifact.ObjectDir(sourcev1.BucketKind, obj.Namespace, obj.Name)
	obj.Status.Artifact = checkStoredArtifact(r.Storage, r.Events, obj, sourcev1.BucketKind,
		r.Signer.published(ctx, sourcev1.BucketKind, obj, obj.Status.Artifact))
	r.Signer.sign(sourcev1.BucketKind, obj, obj.Status.Artifact)
	if obj.Status.Artifact == nil {
		obj.Status.URL = ""
		reconciler.Progressing(obj, "building artifact")
	} else {
		obj.Status.URL = r.Storage.URL(path.Join(objDir, BucketArtifactLink))
	}
	if f := checkBucketSpec(obj); f != nil {
		return f
	}
	creds, f := r.credentials(ctx, obj)
	if f != nil {
		return f
	}
	c, err := newBucketClient(ctx, obj, creds)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "%s", sanitize(err))
	}
	dir, err := os.MkdirTemp("", "bucket-")
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.DirCreationFailedReason,
			Message: "failed to create temporary working directory"}
	}
	defer removeWorkDir(dir)

	timeout := 60 * time.Second
	if obj.Spec.Timeout != nil && obj.Spec.Timeout.Duration > 0 {
		timeout = obj.Spec.Timeout.Duration
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	index, err := indexBucket(fctx, c, obj, dir)
	if err != nil {
		return fetchFailed(sourcev1.BucketOperationFailedReason, "%s", err)
	}
	cur := obj.Status.Artifact
	if cur != nil && cur.Revision == index.revision() {
		r.Events.Event(obj, events.EventTypeTrace, sourcev1.ArtifactUpToDateReason,
			fmt.Sprintf("artifact up-to-date with remote revision: '%s'", cur.Revision), nil)
		if !wasReady { // recovered without needing a new artifact
			r.notify(obj, index.len(), corev1.EventTypeNormal, meta.SucceededReason)
		}
		return nil
	}
	if err := fetchBucket(fctx, c, obj, index, dir); err != nil {
		return fetchFailed(sourcev1.BucketOperationFailedReason, "%s", err)
	}
	rev := index.revision()
	// Flux compatible: the known new revision is written before it is
	// stored, so a failed archive leaves the object saying what it missed.
	msg := fmt.Sprintf("new upstream revision '%s'", rev)
	if cur != nil {
		reconciler.SetCondition(obj, sourcev1.ArtifactOutdatedCondition, metav1.ConditionTrue, sourcev1.NewRevisionReason, msg)
	}
	reconciler.Progressing(obj, "building artifact: "+msg)
	if err := p.Patch(ctx); err != nil {
		return &reconciler.Failure{Reason: sourcev1.PatchOperationFailedReason, Message: fmt.Sprintf("patching status: %s", err)}
	}
	if cur != nil && cur.Revision == rev { // objects changed back while fetched
		return nil
	}
	art, err := r.Storage.Archive(objDir, strings.TrimPrefix(rev, "sha256:")+".tar.gz", rev, dir, nil)
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
			Message: "unable to archive artifact to storage: " + strings.ReplaceAll(strings.ReplaceAll(err.Error(), dir, "."), r.Storage.BasePath+"/", "")}
	}
	r.record(ctx, obj, art, index.len(), wasReady)
	return nil
}

// checkBucketSpec refuses (stalls on) what Eddy does not do, workload
// identity (spec.serviceAccountName), and an spec.sts that does not fit
// spec.provider.
func checkBucketSpec(obj *sourcev1.Bucket) *reconciler.Failure {
	switch obj.Spec.Provider {
	case "", sourcev1.BucketProviderGeneric, sourcev1.BucketProviderAmazon, sourcev1.BucketProviderGoogle, sourcev1.BucketProviderAzure:
	default:
		return fetchFailed(sourcev1.InvalidProviderConfigReason, "unsupported provider '%s'", obj.Spec.Provider).Stall()
	}
	if obj.Spec.ServiceAccountName != "" {
		return fetchFailed(meta.FeatureGateDisabledReason,
			"spec.serviceAccountName (workload identity) is not supported by Eddy yet: use spec.secretRef").Stall()
	}
	provider := obj.Spec.Provider
	if provider == "" {
		provider = sourcev1.BucketProviderGeneric
	}
	if sts := obj.Spec.STS; sts != nil {
		if err := validateSTS(provider, sts); err != nil {
			return fetchFailed(sourcev1.InvalidSTSConfigurationReason, "%s", err).Stall()
		}
		if _, err := url.Parse(sts.Endpoint); err != nil {
			return fetchFailed(sourcev1.URLInvalidReason, "failed to parse STS endpoint '%s'", sts.Endpoint).Stall()
		}
	}
	return nil
}

// newBucketClient is the client of obj's provider. Its failures are
// AuthenticationFailed, as Flux's.
func newBucketClient(ctx context.Context, obj *sourcev1.Bucket, creds *bucketCredentials) (bucketClient, error) {
	switch obj.Spec.Provider {
	case sourcev1.BucketProviderGoogle:
		return newGCSBucket(ctx, creds)
	case sourcev1.BucketProviderAzure:
		return newAzureBucket(ctx, obj.Spec.Endpoint, creds)
	}
	return newMinioBucket(ctx, obj, creds)
}

// credentials reads the Secrets obj names (bucketCredentials). Failures
// are AuthenticationFailed and name Secrets and keys, never their values.
// Flux compatible (setupCredentials): its messages.
func (r *BucketReconciler) credentials(ctx context.Context, obj *sourcev1.Bucket) (*bucketCredentials, *reconciler.Failure) {
	// get reads the Secret ref names; what prefixes the message of a failure.
	get := func(ref *meta.LocalObjectReference, what string) (*corev1.Secret, *reconciler.Failure) {
		if ref == nil {
			return nil, nil
		}
		s := &corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := r.Get(ctx, key, s); err != nil {
			return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "%s '%s': %s", what, key, err)
		}
		return s, nil
	}
	sts := obj.Spec.STS
	if sts == nil {
		sts = &sourcev1.BucketSTSSpec{}
	}
	creds := &bucketCredentials{}
	var f *reconciler.Failure
	if creds.secret, f = get(obj.Spec.SecretRef, "failed to get secret"); f != nil {
		return nil, f
	}
	if creds.stsSecret, f = get(sts.SecretRef, "failed to get STS secret"); f != nil {
		return nil, f
	}
	ps, f := get(obj.Spec.ProxySecretRef, "failed to get proxy URL: failed to get secret")
	if f != nil {
		return nil, f
	}
	if ps != nil {
		u, err := proxyURL(ps.Data)
		if err != nil {
			return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get proxy URL: %s", err)
		}
		creds.proxy = u
	}
	tlsOf := func(ref *meta.LocalObjectReference, what string) (*tls.Config, *reconciler.Failure) {
		s, f := get(ref, "failed to get "+what+": failed to get secret")
		if f != nil || s == nil {
			return nil, f
		}
		cfg, err := tlsConfigFromSecret(s, true)
		if err != nil {
			return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get %s: %s", what, err)
		}
		return cfg, nil
	}
	if creds.tls, f = tlsOf(obj.Spec.CertSecretRef, "TLS config"); f != nil {
		return nil, f
	}
	if creds.stsTLS, f = tlsOf(sts.CertSecretRef, "STS TLS config"); f != nil {
		return nil, f
	}
	validate := validateS3Secret
	switch obj.Spec.Provider {
	case sourcev1.BucketProviderGoogle:
		validate = validateGCPSecret
	case sourcev1.BucketProviderAzure:
		validate = validateAzureSecret
	}
	if err := validate(creds.secret); err != nil {
		return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "%s", err)
	}
	if sts.Provider == sourcev1.STSProviderLDAP {
		if err := validateLDAPSecret(creds.stsSecret); err != nil {
			return nil, fetchFailed(sourcev1.AuthenticationFailedReason, "%s", err)
		}
	}
	return creds, nil
}

// record records art, just stored from files objects, in obj's status,
// points the status URL's link at it, collects old artifacts and emits
// NewArtifact (or, for a recovery, Succeeded).
func (r *BucketReconciler) record(ctx context.Context, obj *sourcev1.Bucket, art *meta.Artifact, files int, wasReady bool) {
	prev := obj.Status.Artifact
	r.Signer.sign(sourcev1.BucketKind, obj, art)
	obj.Status.Artifact = art
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	if link, err := r.Storage.Symlink(*art, BucketArtifactLink); err != nil {
		r.Events.Event(obj, events.EventTypeTrace, sourcev1.SymlinkUpdateFailedReason,
			"failed to update status URL symlink: "+strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", ""), nil)
	} else {
		obj.Status.URL = link
	}
	if _, err := r.Storage.GarbageCollect(*art); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage collection of old artifacts failed")
	}
	switch {
	case prev == nil || prev.Digest != art.Digest:
		r.notify(obj, files, corev1.EventTypeNormal, "NewArtifact")
	case !wasReady:
		r.notify(obj, files, corev1.EventTypeNormal, meta.SucceededReason)
	}
}

// notify emits the event of a stored artifact. Flux compatible: "stored
// artifact with <n> fetched files from '<bucket>' bucket", with the
// revision and digest annotations.
func (r *BucketReconciler) notify(obj *sourcev1.Bucket, files int, eventType, reason string) {
	art := obj.Status.Artifact
	r.Events.Event(obj, eventType, reason, fmt.Sprintf("stored artifact with %d fetched files from '%s' bucket", files, obj.Spec.BucketName),
		map[string]string{
			sourcev1.GroupVersion.Group + "/revision": art.Revision,
			sourcev1.GroupVersion.Group + "/digest":   art.Digest,
		})
}
