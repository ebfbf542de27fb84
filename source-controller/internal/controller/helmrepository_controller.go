package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// HelmIndexLink is the name of the link, in a HelmRepository's storage
// directory, to its latest index artifact; status.url is its URL. Flux
// compatible.
const HelmIndexLink = "index.yaml"

// HelmRepositoryReconciler turns HelmRepository objects of type default
// into index artifacts: it downloads `<spec.url>/index.yaml`, and when its
// bytes differ from the stored artifact's, stores the parsed index as
// indented JSON in `helmrepository/<ns>/<name>/index-<hex>.yaml` and points
// `index.yaml` at it. Objects of type oci are made static. Flux compatible:
// conditions, reasons, messages and events of source-controller (contract
// §1.3, §2.3, §2.4; 2.10 supplement §2.2).
type HelmRepositoryReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Signer signs the artifacts written to the status; nil signs none.
	Signer *Signer
	Events *events.Recorder
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
	// IndexMaxSize is the largest index accepted, in bytes
	// (--helm-index-max-size); 0 means DefaultHelmIndexMaxSize.
	IndexMaxSize int64
}

// SetupWithManager registers the reconciler with the work-queue options
// opts: it reconciles on creation, spec change and reconcile request.
func (r *HelmRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.HelmRepository{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		WithOptions(opts).
		Complete(r)
}

// Reconcile brings one HelmRepository up to date: type oci objects are
// made static (migrateToStatic); the others go through the skeleton
// (pkg/reconciler) with run.
func (r *HelmRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &sourcev1.HelmRepository{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
		return ctrl.Result{}, r.migrateToStatic(ctx, obj)
	}
	skel := sourceSkeleton(r.Client, r.Storage, sourcev1.HelmRepositoryKind, func(obj *sourcev1.HelmRepository) bool { return obj.Spec.Suspend })
	return skel.Reconcile(ctx, req, &sourcev1.HelmRepository{}, r.run)
}

// migrateToStatic makes a type oci HelmRepository static: its stored
// artifacts are deleted, its status emptied and its finalizer removed, as
// HelmCharts resolve OCI charts from the registry themselves. A suspended
// object is left alone unless it is being deleted. Flux compatible
// (migrationToStatic).
func (r *HelmRepositoryReconciler) migrateToStatic(ctx context.Context, obj *sourcev1.HelmRepository) error {
	if obj.Spec.Suspend && obj.DeletionTimestamp.IsZero() {
		return nil
	}
	st := obj.Status
	empty := st.ObservedGeneration <= 0 && len(st.Conditions) == 0 && st.URL == "" && st.Artifact == nil && st.LastHandledReconcileAt == ""
	if empty && !controllerutil.ContainsFinalizer(obj, sourcev1.SourceFinalizer) {
		return nil
	}
	if _, err := finalizeSource[*sourcev1.HelmRepository](r.Storage, sourcev1.HelmRepositoryKind)(ctx, obj); err != nil {
		return err
	}
	if !empty {
		base := obj.DeepCopy()
		obj.Status = sourcev1.HelmRepositoryStatus{}
		if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	return reconciler.RemoveFinalizers(ctx, r.Client, obj, "", sourcev1.SourceFinalizer)
}

// run reconciles a live, unsuspended HelmRepository of type default and
// summarizes the outcome in its status. A failure is returned, retried
// with the work queue's back-off unless stalled; success requeues after
// spec.interval (1m when 0).
func (r *HelmRepositoryReconciler) run(ctx context.Context, obj *sourcev1.HelmRepository, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	start := time.Now()
	old := obj.DeepCopy()
	if err := r.Signer.ready(ctx); err != nil {
		return ctrl.Result{}, err
	}
	recErr := r.reconcile(ctx, obj, p)
	r.summarize(obj, recErr)
	if recErr != nil {
		return ctrl.Result{}, recErr
	}
	r.notify(ctx, old, obj)
	interval := obj.Spec.Interval.Duration
	if interval <= 0 {
		interval = time.Minute
	}
	next := controllerkit.Jitter(interval, r.JitterPercent)
	ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("stored artifact: revision '%s'", obj.Status.Artifact.Revision),
		"duration", time.Since(start).String(), "next", next.String())
	return ctrl.Result{RequeueAfter: next}, nil
}

// reconcile runs the storage, fetch and artifact steps; it records
// observations in obj.Status and returns the first failure.
func (r *HelmRepositoryReconciler) reconcile(ctx context.Context, obj *sourcev1.HelmRepository, p *reconciler.StatusPatcher) *reconciler.Failure {
	objDir := artifact.ObjectDir(sourcev1.HelmRepositoryKind, obj.Namespace, obj.Name)
	obj.Status.Artifact = checkStoredArtifact(r.Storage, r.Events, obj, sourcev1.HelmRepositoryKind,
		r.Signer.published(ctx, sourcev1.HelmRepositoryKind, obj, obj.Status.Artifact))
	r.Signer.sign(sourcev1.HelmRepositoryKind, obj, obj.Status.Artifact)
	if obj.Status.Artifact == nil {
		obj.Status.URL = ""
	} else {
		obj.Status.URL = r.Storage.URL(path.Join(objDir, HelmIndexLink))
	}

	u, err := redact.ParseURL(obj.Spec.URL)
	switch {
	case err == nil && u.Scheme == "oci":
		return fetchFailed(sourcev1.URLInvalidReason, "invalid Helm repository URL: 'oci' URL scheme cannot be used with 'default' HelmRepository type").Stall()
	case err != nil:
		return fetchFailed(sourcev1.URLInvalidReason, "invalid Helm repository URL: %s", err).Stall()
	case u.Scheme != "http" && u.Scheme != "https":
		return fetchFailed(meta.FailedReason, "failed to construct Helm client: scheme %q not supported", u.Scheme).Stall()
	}
	ic, err := newIndexClient(ctx, r.Client, obj)
	if err != nil {
		return fetchFailed(sourcev1.AuthenticationFailedReason, "%s", err)
	}
	maxSize := r.IndexMaxSize
	if maxSize <= 0 {
		maxSize = DefaultHelmIndexMaxSize
	}
	data, err := ic.fetch(ctx, indexURL(u), maxSize)
	if err != nil {
		return fetchFailed(meta.FailedReason, "failed to fetch Helm repository index: failed to cache index to temporary file: %s", err)
	}
	rev := indexRevision(data)
	if cur := obj.Status.Artifact; cur != nil && cur.Revision == rev {
		return nil // the stored index is the served one: no parse, no store
	}
	idx, err := loadIndex(data)
	if err != nil {
		// As Flux sc v1.10.0, the message names the repository, its
		// credentials masked.
		return fetchFailed(sourcev1.IndexationFailedReason, "failed to load Helm repository from index YAML at %s: failed to load index: %s", redact.URL(obj.Spec.URL), err)
	}

	// Flux compatible: the known new revision is written before it is
	// stored, so a failed store leaves the object saying what it missed.
	msg := fmt.Sprintf("new index revision '%s'", rev)
	if obj.Status.Artifact != nil {
		reconciler.SetCondition(obj, sourcev1.ArtifactOutdatedCondition, metav1.ConditionTrue, sourcev1.NewRevisionReason, msg)
	}
	reconciler.Progressing(obj, "building artifact: "+msg)
	if err := p.Patch(ctx); err != nil {
		return &reconciler.Failure{Reason: sourcev1.PatchOperationFailedReason, Message: fmt.Sprintf("patching status: %s", err)}
	}

	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
			Message: fmt.Sprintf("unable to get JSON index from chart repo: %s", err)}
	}
	art, err := r.Storage.Copy(objDir, "index-"+strings.TrimPrefix(rev, "sha256:")+".yaml", rev, bytes.NewReader(b))
	if err != nil {
		return &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
			Message: "unable to save artifact to storage: " + strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", "")}
	}
	r.Signer.sign(sourcev1.HelmRepositoryKind, obj, art)
	obj.Status.Artifact = art
	if link, err := r.Storage.Symlink(*art, HelmIndexLink); err != nil {
		r.Events.Event(obj, events.EventTypeTrace, sourcev1.SymlinkUpdateFailedReason,
			"failed to update status URL symlink: "+strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", ""), nil)
	} else {
		obj.Status.URL = link
	}
	if _, err := r.Storage.GarbageCollect(*art); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage collection of old artifacts failed")
	}
	return nil
}

// helmRepositoryFailConditions are the conditions whose removal is a
// recovery (Flux's helmRepositoryFailConditions).
var helmRepositoryFailConditions = []string{sourcev1.FetchFailedCondition, sourcev1.StorageOperationFailedCondition}

// notify emits the event of a successful reconcile: NewArtifact for a new
// artifact, Succeeded for a recovery with the artifact it had, none
// otherwise. Flux compatible (the message names the size in go-units'
// format and spec.url, credentials masked).
func (r *HelmRepositoryReconciler) notify(ctx context.Context, old, obj *sourcev1.HelmRepository) {
	art := obj.Status.Artifact
	size := "unknown size"
	if art.Size != nil {
		size = "size " + humanSize(*art.Size)
	}
	msg := fmt.Sprintf("stored fetched index of %s from '%s'", size, redact.URL(obj.Spec.URL))
	annotations := map[string]string{
		sourcev1.GroupVersion.Group + "/revision": art.Revision,
		sourcev1.GroupVersion.Group + "/digest":   art.Digest,
	}
	switch {
	case old.Status.Artifact == nil || old.Status.Artifact.Digest != art.Digest:
		r.Events.Event(obj, corev1.EventTypeNormal, "NewArtifact", msg, annotations)
	case hasAnyCondition(old, helmRepositoryFailConditions):
		r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, msg, annotations)
	default:
		return
	}
	ctrl.LoggerFrom(ctx).Info(msg)
}

func hasAnyCondition(obj reconciler.Object, types []string) bool {
	for _, t := range types {
		if apimeta.FindStatusCondition(obj.GetConditions(), t) != nil {
			return true
		}
	}
	return false
}

// summarize writes the conditions for the outcome (summarizeSource): Ready
// and ArtifactInStorage say "stored artifact: revision '<rev>'"; a failure
// keeps the stored artifact and its ArtifactInStorage condition. Flux
// compatible.
func (r *HelmRepositoryReconciler) summarize(obj *sourcev1.HelmRepository, recErr *reconciler.Failure) {
	summarizeSource(obj, r.Events, obj.Status.Artifact, "stored artifact: revision '%s'", recErr, helmRepositoryFailConditions...)
}
