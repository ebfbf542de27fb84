package controller

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/oci"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// OCIArtifactLink is the name of the link, in an OCIRepository's storage
// directory, to its latest artifact; status.url is its URL. Flux
// compatible.
const OCIArtifactLink = "latest.tar.gz"

// OCIRepositoryReconciler turns OCIRepository objects into artifacts: it
// resolves spec.ref to a manifest digest (one HEAD of a tag; a tag listing
// for semver; nothing for a digest) and, only when that revision or the
// content configuration (ignore, layerSelector) differs from the stored
// artifact, pulls the selected layer and stores it: extracted, filtered by
// the ignore rules and archived as `<digest>.tar.gz`, or copied as it is.
// Flux compatible: conditions, reasons, messages, events and revision
// strings of source-controller's OCIRepository (v1.10).
type OCIRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Signer signs the artifacts written to the status; nil signs none.
	Signer *Signer
	Events *events.Recorder
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
	// Limits bound a pulled layer: MaxBytes its compressed size and its
	// extracted content, MaxFiles its entries; zero fields take
	// artifact.DefaultLimits (1 GiB, 100,000 entries).
	Limits artifact.Limits
}

// SetupWithManager registers the reconciler with the work-queue options
// opts: it reconciles on creation, spec change and reconcile request.
func (r *OCIRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.OCIRepository{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		WithOptions(opts).
		Complete(r)
}

// Reconcile brings one OCIRepository's artifact up to date. The skeleton
// (pkg/reconciler) runs the finalizer and suspend prologue and writes the
// status last; run does the rest.
func (r *OCIRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := sourceSkeleton(r.Client, r.Storage, sourcev1.OCIRepositoryKind, func(obj *sourcev1.OCIRepository) bool { return obj.Spec.Suspend })
	return skel.Reconcile(ctx, req, &sourcev1.OCIRepository{}, r.run)
}

// run reconciles a live, unsuspended OCIRepository and summarizes the
// outcome in its status. A failure is returned, retried with the work
// queue's back-off unless stalled; success requeues after spec.interval.
func (r *OCIRepositoryReconciler) run(ctx context.Context, obj *sourcev1.OCIRepository, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	start := time.Now()
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	if err := r.Signer.ready(ctx); err != nil {
		return ctrl.Result{}, err
	}
	recErr := r.reconcile(ctx, obj, p, wasReady)
	summarizeSource(obj, r.Events, obj.Status.Artifact, "stored artifact for digest '%s'", recErr, ociRepositoryFailConditions...)
	var done string
	if recErr == nil {
		done = fmt.Sprintf("stored artifact with revision '%s'", obj.Status.Artifact.Revision)
	}
	interval := time.Minute
	if obj.Spec.Interval != nil && obj.Spec.Interval.Duration > 0 {
		interval = obj.Spec.Interval.Duration
	}
	return outcome(ctrl.LoggerFrom(ctx), start, recErr, done, controllerkit.Jitter(interval, r.JitterPercent), 0)
}

// ociRepositoryFailConditions are the conditions whose removal is a
// recovery (Flux's ociRepositoryFailConditions).
// SourceVerified is left to clearVerification: a True one outlives failures.
var ociRepositoryFailConditions = []string{sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition}

func (r *OCIRepositoryReconciler) limits() artifact.Limits {
	lim := r.Limits
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = artifact.DefaultLimits.MaxBytes
	}
	if lim.MaxFiles <= 0 {
		lim.MaxFiles = artifact.DefaultLimits.MaxFiles
	}
	lim.SkipSymlinks = true // Flux compatible: links inside the tree are skipped
	return lim
}

// reconcile runs the storage, source and artifact steps; it records
// observations in obj.Status and returns the first failure. A failure
// leaves the stored artifact as it was.
func (r *OCIRepositoryReconciler) reconcile(ctx context.Context, obj *sourcev1.OCIRepository, p *reconciler.StatusPatcher, wasReady bool) *reconciler.Failure {
	objDir := artifact.ObjectDir(sourcev1.OCIRepositoryKind, obj.Namespace, obj.Name)
	obj.Status.Artifact = checkStoredArtifact(r.Storage, r.Events, obj, sourcev1.OCIRepositoryKind,
		r.Signer.published(ctx, sourcev1.OCIRepositoryKind, obj, obj.Status.Artifact))
	r.Signer.sign(sourcev1.OCIRepositoryKind, obj, obj.Status.Artifact)
	if obj.Status.Artifact == nil {
		obj.Status.URL = ""
	} else {
		obj.Status.URL = r.Storage.URL(path.Join(objDir, OCIArtifactLink))
	}

	repo, f := checkOCISpec(obj)
	if f != nil {
		return f
	}

	timeout := 60 * time.Second
	if obj.Spec.Timeout != nil && obj.Spec.Timeout.Duration > 0 {
		timeout = obj.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	t, f := r.transport(ctx, obj)
	if f != nil {
		return f
	}
	if f := ociProviderAuth(ctx, obj, &t); f != nil {
		return f
	}
	c, err := newOCIClient(ctx, repo, t)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "failed to generate transport for '%s': %s", obj.Spec.URL, err)
	}
	mediaType := ""
	if ls := obj.Spec.LayerSelector; ls != nil {
		mediaType = ls.MediaType
	}
	ref, err := c.ref(obj.Spec.Reference, mediaType)
	if err != nil {
		return fetchFailed(sourcev1.ReadOperationFailedReason, "failed to determine the artifact tag for '%s': %s", obj.Spec.URL, err)
	}
	rev, err := c.revision(ref)
	if err != nil {
		return fetchFailed(sourcev1.OCIPullFailedReason, "failed to determine artifact digest: %s", err)
	}
	if f := verifyOCIRevision(ctx, r.Client, obj, repo, rev, c.opts); f != nil {
		return f
	}
	if cur := obj.Status.Artifact; cur != nil && cur.Revision == rev && !ociContentConfigChanged(obj) {
		if !wasReady { // recovered without needing a new artifact
			r.notify(obj, corev1.EventTypeNormal, meta.SucceededReason)
		}
		return nil // up to date: no pull
	}

	// Flux compatible: the known new revision is written before it is
	// stored, so a failed pull leaves the object saying what it missed.
	msg := fmt.Sprintf("new revision '%s' for '%s'", rev, ref)
	if obj.Status.Artifact != nil {
		reconciler.SetCondition(obj, sourcev1.ArtifactOutdatedCondition, metav1.ConditionTrue, sourcev1.NewRevisionReason, msg)
	}
	reconciler.Progressing(obj, "building artifact: "+msg)
	if err := p.Patch(ctx); err != nil {
		return &reconciler.Failure{Reason: sourcev1.PatchOperationFailedReason, Message: fmt.Sprintf("patching status: %s", err)}
	}

	lim := r.limits()
	img, err := c.image(rev)
	if err != nil {
		return fetchFailed(sourcev1.OCIPullFailedReason, "failed to pull artifact from '%s': %s", obj.Spec.URL, err)
	}
	op := sourcev1.OCILayerExtract
	if ls := obj.Spec.LayerSelector; ls != nil && ls.Operation != "" {
		op = ls.Operation
	}
	layer, err := selectLayer(img, mediaType, lim.MaxBytes)
	if err != nil {
		return fetchFailed(sourcev1.OCILayerOperationFailedReason, "%s", err)
	}
	defer layer.Content.Close()

	art, f := r.storeLayer(obj, objDir, rev, op, layer, lim)
	if f != nil {
		return f
	}
	art.Metadata = layer.Annotations
	r.record(ctx, obj, art, wasReady)
	return nil
}

// checkOCISpec refuses (stalls on) what Eddy does not do (a provider it
// does not build) and an invalid spec.url, and returns the repository
// spec.url names.
func checkOCISpec(obj *sourcev1.OCIRepository) (name.Repository, *reconciler.Failure) {
	clearVerification(obj, obj.Spec.Verify != nil)
	switch p := obj.Spec.Provider; {
	case p == "", p == sourcev1.OCIProviderGeneric, ociProviders[p]:
	default:
		return name.Repository{}, fetchFailed(sourcev1.InvalidProviderConfigReason,
			"provider '%s' is not supported: use 'generic' with spec.secretRef or spec.serviceAccountName", obj.Spec.Provider).Stall()
	}
	repo, err := parseOCIRepository(obj.Spec.URL, obj.Spec.Insecure)
	if err != nil {
		return name.Repository{}, fetchFailed(sourcev1.URLInvalidReason, "URL validation failed for '%s': %s", redact.URL(obj.Spec.URL),
			strings.TrimPrefix(err.Error(), errInvalidOCIURL.Error()+": ")).Stall()
	}
	return repo, nil
}

// storeLayer stores the layer of revision rev as the artifact of obj in
// objDir: extracted (and archived without what spec.ignore names) or copied
// as it is, as op says; nothing is stored on failure.
func (r *OCIRepositoryReconciler) storeLayer(obj *sourcev1.OCIRepository, objDir, rev, op string, layer *ociLayer, lim artifact.Limits) (*meta.Artifact, *reconciler.Failure) {
	fileName := digestOfRevision(rev) + ".tar.gz"
	switch op {
	case sourcev1.OCILayerExtract:
		dir, err := os.MkdirTemp("", "ocirepository-")
		if err != nil {
			return nil, &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.DirCreationFailedReason,
				Message: "failed to create temporary working directory"}
		}
		defer removeWorkDir(dir)
		err = artifact.Extract(layer.Content, dir, lim)
		if err == nil {
			// The tar stream ends before the gzip trailer and the padding;
			// the layer's digest is checked only at EOF, so read to it.
			_, err = io.Copy(io.Discard, layer.Content)
		}
		if err != nil {
			return nil, fetchFailed(sourcev1.OCILayerOperationFailedReason, "failed to extract layer contents from artifact: %s",
				strings.ReplaceAll(err.Error(), dir, "."))
		}
		ignore, err := artifact.LoadSourceIgnore(dir, obj.Spec.Ignore)
		if err != nil {
			return nil, &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.SourceIgnoreErrorReason,
				Message: "failed to load source ignore patterns from repository: " + strings.ReplaceAll(err.Error(), dir, ".")}
		}
		art, err := r.Storage.Archive(objDir, fileName, rev, dir, ignore)
		if err != nil {
			return nil, &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
				Message: "unable to archive artifact to storage: " + strings.ReplaceAll(strings.ReplaceAll(err.Error(), dir, "."), r.Storage.BasePath+"/", "")}
		}
		return art, nil
	case sourcev1.OCILayerCopy:
		// The layer streams into storage; a read failure (the registry,
		// the digest check at EOF, the size limit) leaves nothing stored.
		art, err := r.Storage.Copy(objDir, fileName, rev, layer.Content)
		if err != nil {
			return nil, fetchFailed(sourcev1.OCILayerOperationFailedReason, "failed to copy layer from artifact: %s",
				strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", ""))
		}
		return art, nil
	}
	return nil, fetchFailed(sourcev1.OCILayerOperationFailedReason, "unsupported layer operation: %s", op).Stall()
}

// record records art, just stored, in obj's status with what it observed
// of the spec, points the status URL's link at it, collects old artifacts
// and emits NewArtifact (or, for a recovery, Succeeded).
func (r *OCIRepositoryReconciler) record(ctx context.Context, obj *sourcev1.OCIRepository, art *meta.Artifact, wasReady bool) {
	prev := obj.Status.Artifact
	r.Signer.sign(sourcev1.OCIRepositoryKind, obj, art)
	obj.Status.Artifact = art
	obj.Status.ObservedIgnore = obj.Spec.Ignore
	obj.Status.ObservedLayerSelector = obj.Spec.LayerSelector.DeepCopy()
	if link, err := r.Storage.Symlink(*art, OCIArtifactLink); err != nil {
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
		r.notify(obj, corev1.EventTypeNormal, "NewArtifact")
	case !wasReady:
		r.notify(obj, corev1.EventTypeNormal, meta.SucceededReason)
	}
}

// notify emits the event of a stored artifact. Flux compatible: "stored
// artifact with revision '<rev>' from '<url>'", followed by ", origin
// source '<src>', origin revision '<rev>'" when the manifest has both
// annotations; the revision, digest and originRevision annotations.
func (r *OCIRepositoryReconciler) notify(obj *sourcev1.OCIRepository, eventType, reason string) {
	art := obj.Status.Artifact
	msg := fmt.Sprintf("stored artifact with revision '%s' from '%s'", art.Revision, obj.Spec.URL)
	annotations := map[string]string{
		sourcev1.GroupVersion.Group + "/revision": art.Revision,
		sourcev1.GroupVersion.Group + "/digest":   art.Digest,
	}
	src, rev := art.Metadata[oci.SourceAnnotation], art.Metadata[oci.RevisionAnnotation]
	if rev != "" {
		annotations[sourcev1.GroupVersion.Group+"/originRevision"] = rev
	}
	if src != "" && rev != "" {
		msg = fmt.Sprintf("%s, origin source '%s', origin revision '%s'", msg, src, rev)
	}
	r.Events.Event(obj, eventType, reason, msg, annotations)
}

// transport reads the Secrets and ServiceAccount obj names into the
// registry transport: spec.secretRef and the imagePullSecrets of
// spec.serviceAccountName (Docker configs), spec.certSecretRef (`ca.crt`,
// `tls.crt`, `tls.key`), spec.proxySecretRef (`address`, `username`,
// `password`). With spec.insecure and no certSecretRef, TLS certificates
// are not verified, as in Flux. Failures are AuthenticationFailed and name
// Secrets and keys, never their values.
func (r *OCIRepositoryReconciler) transport(ctx context.Context, obj *sourcev1.OCIRepository) (ociTransport, *reconciler.Failure) {
	var t ociTransport
	var pull []corev1.Secret
	if ref := obj.Spec.SecretRef; ref != nil {
		s := corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := r.Get(ctx, key, &s); err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get credential: failed to get secret '%s': %s", key, err)
		}
		pull = append(pull, s)
	}
	if n := obj.Spec.ServiceAccountName; n != "" {
		sa := &corev1.ServiceAccount{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: n}
		if err := r.Get(ctx, key, sa); err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get service account '%s': %s", key, err)
		}
		for _, ips := range sa.ImagePullSecrets {
			s := corev1.Secret{}
			skey := types.NamespacedName{Namespace: obj.Namespace, Name: ips.Name}
			if err := r.Get(ctx, skey, &s); err != nil {
				return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get credential: failed to get image pull secret '%s': %s", skey, err)
			}
			pull = append(pull, s)
		}
	}
	if len(pull) > 0 {
		kc, err := newDockerConfigKeychain(pull)
		if err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get credential: %s", err)
		}
		t.Keychain = kc
	} else {
		t.Keychain = authn.NewMultiKeychain()
	}
	if ref := obj.Spec.CertSecretRef; ref != nil {
		s := &corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := r.Get(ctx, key, s); err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to generate transport for '%s': failed to get secret '%s': %s", obj.Spec.URL, key, err)
		}
		cfg, err := tlsConfigFromSecret(s, true)
		if err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to generate transport for '%s': %s", obj.Spec.URL, err)
		}
		t.TLS = cfg
	} else if obj.Spec.Insecure {
		t.TLS = insecureTLS()
	}
	if ref := obj.Spec.ProxySecretRef; ref != nil {
		s := &corev1.Secret{}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}
		if err := r.Get(ctx, key, s); err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get proxy address: failed to get secret '%s': %s", key, err)
		}
		u, err := proxyURL(s.Data)
		if err != nil {
			return t, fetchFailed(sourcev1.AuthenticationFailedReason, "failed to get proxy address: %s", err)
		}
		t.Proxy = u
	}
	return t, nil
}

// ociContentConfigChanged reports whether spec fields that shape the
// artifact differ from those its status says it was built with. Flux
// compatible (ignore and layerSelector).
func ociContentConfigChanged(obj *sourcev1.OCIRepository) bool {
	return !equalStringPtr(obj.Spec.Ignore, obj.Status.ObservedIgnore) ||
		!equality.Semantic.DeepEqual(obj.Spec.LayerSelector, obj.Status.ObservedLayerSelector)
}
