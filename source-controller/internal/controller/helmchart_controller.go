package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/source-controller/internal/helm/chart"
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

// helmChartSourceIndex is the field index of HelmCharts by their source,
// `<Kind>/<name>` (Flux's index key).
const helmChartSourceIndex = ".metadata.helmChartSource"

// HelmChartReconciler turns HelmChart objects into chart artifacts: it
// packages a chart directory of a GitRepository artifact, or pulls a chart
// version from a HelmRepository (its stored index, or an OCI registry), and
// stores `<chart>-<version>.tgz` with the `latest.tar.gz` link. Building is
// internal/helm/chart; this type only wires sources, storage and status.
// Flux compatible: conditions, reasons, messages and events of
// source-controller's HelmChart reconciler (contract §1.4, 2.10 §2.2).
type HelmChartReconciler struct {
	client.Client
	Storage *artifact.Storage
	// Signer signs the artifacts written to the status; nil signs none.
	Signer *Signer
	Events *events.Recorder
	// Limits bound the charts loaded (--helm-chart-max-size,
	// --helm-chart-file-max-size).
	Limits chart.Limits
	// JitterPercent varies each requeue interval by up to ± this percentage.
	JitterPercent float64
	// RequeueDependency is the wait before retrying a HelmChart whose source
	// has no artifact yet; 0 means Flux's 30s. A new source artifact
	// retries it at once anyway.
	RequeueDependency time.Duration
}

// SetupWithManager registers the reconciler: it reconciles on creation,
// spec change and reconcile request, and the HelmCharts of a GitRepository
// or HelmRepository whose artifact changed.
func (r *HelmChartReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &sourcev1.HelmChart{}, helmChartSourceIndex,
		func(o client.Object) []string {
			ref := o.(*sourcev1.HelmChart).Spec.SourceRef
			return []string{ref.Kind + "/" + ref.Name}
		}); err != nil {
		return err
	}
	charts := func(kind string) func(client.Object) []client.ListOption {
		return func(src client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(src.GetNamespace()), client.MatchingFields{helmChartSourceIndex: kind + "/" + src.GetName()}}
		}
	}
	list := func() client.ObjectList { return &sourcev1.HelmChartList{} }
	return ctrl.NewControllerManagedBy(mgr).
		For(&sourcev1.HelmChart{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		Watches(&sourcev1.HelmRepository{}, controllerkit.EnqueueListed(r.Client, list, charts(sourcev1.HelmRepositoryKind)),
			builder.WithPredicates(controllerkit.ArtifactChanged{})).
		Watches(&sourcev1.GitRepository{}, controllerkit.EnqueueListed(r.Client, list, charts(sourcev1.GitRepositoryKind)),
			builder.WithPredicates(controllerkit.ArtifactChanged{})).
		Watches(&sourcev1.Bucket{}, controllerkit.EnqueueListed(r.Client, list, charts(sourcev1.BucketKind)),
			builder.WithPredicates(controllerkit.ArtifactChanged{})).
		WithOptions(opts).
		Complete(r)
}

// Reconcile brings one HelmChart's artifact up to date within the skeleton
// (finalizer, suspend, status patch).
func (r *HelmChartReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := sourceSkeleton(r.Client, r.Storage, sourcev1.HelmChartKind, func(obj *sourcev1.HelmChart) bool { return obj.Spec.Suspend })
	return skel.Reconcile(ctx, req, &sourcev1.HelmChart{}, r.run)
}

func (r *HelmChartReconciler) run(ctx context.Context, obj *sourcev1.HelmChart, _ *reconciler.StatusPatcher) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	wasReady := apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition)
	if err := r.Signer.ready(ctx); err != nil {
		return ctrl.Result{}, err
	}
	b, recErr := r.reconcile(ctx, obj, wasReady)
	r.summarize(obj, b, recErr)
	var done string
	if recErr == nil {
		done = b.Summary()
	}
	return outcome(log, start, recErr, done, controllerkit.Jitter(obj.Spec.Interval.Duration, r.JitterPercent), r.RequeueDependency)
}

// reconcile runs the storage, source, build and artifact steps; it records
// observations in obj.Status and returns the build or the first failure.
func (r *HelmChartReconciler) reconcile(ctx context.Context, obj *sourcev1.HelmChart, wasReady bool) (*chart.Build, *reconciler.Failure) {
	obj.Status.Artifact = checkStoredArtifact(r.Storage, r.Events, obj, sourcev1.HelmChartKind,
		r.Signer.published(ctx, sourcev1.HelmChartKind, obj, obj.Status.Artifact))
	r.Signer.sign(sourcev1.HelmChartKind, obj, obj.Status.Artifact)
	if obj.Status.Artifact == nil {
		obj.Status.URL = ""
	} else {
		obj.Status.URL = r.Storage.URL(linkPath(*obj.Status.Artifact))
	}
	if f := startChartVerification(obj); f != nil {
		return nil, f
	}
	src, f := r.getSource(ctx, obj)
	if f != nil {
		return nil, f
	}
	var (
		b   *chart.Build
		err error
	)
	switch s := src.(type) {
	case *sourcev1.GitRepository:
		b, f = r.buildFromTarball(ctx, obj, s.Status.Artifact)
	case *sourcev1.Bucket:
		b, f = r.buildFromTarball(ctx, obj, s.Status.Artifact)
	case *sourcev1.HelmRepository:
		b, f = r.buildFromHelmRepository(ctx, obj, s)
	}
	if f != nil {
		return nil, f
	}
	if b.Cached {
		if !wasReady {
			r.event(obj, b)
		}
		return b, nil
	}
	if cur := obj.Status.Artifact; cur != nil && (cur.Revision != b.Version || obj.Status.ObservedChartName != b.Name) {
		reconciler.SetCondition(obj, sourcev1.ArtifactOutdatedCondition, metav1.ConditionTrue, "NewChart", b.Summary())
	}
	art, err := r.Storage.Copy(artifact.ObjectDir(sourcev1.HelmChartKind, obj.Namespace, obj.Name),
		fmt.Sprintf("%s-%s.tgz", b.Name, b.Version), b.Version, bytes.NewReader(b.Data))
	if err != nil {
		return nil, &reconciler.Failure{Condition: sourcev1.StorageOperationFailedCondition, Reason: sourcev1.ArchiveOperationFailedReason,
			Message: "unable to copy Helm chart to storage: " + strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", "")}
	}
	prev := obj.Status.Artifact
	r.Signer.sign(sourcev1.HelmChartKind, obj, art)
	obj.Status.Artifact = art
	obj.Status.ObservedChartName = b.Name
	obj.Status.ObservedValuesFiles = nil
	if obj.Spec.IgnoreMissingValuesFiles {
		obj.Status.ObservedValuesFiles = b.ValuesFiles
	}
	if u, err := r.Storage.Symlink(*art, "latest.tar.gz"); err != nil {
		r.Events.Event(obj, events.EventTypeTrace, sourcev1.SymlinkUpdateFailedReason, "failed to update status URL symlink", nil)
	} else {
		obj.Status.URL = u
	}
	if _, err := r.Storage.GarbageCollect(*art); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage collection of old artifacts failed")
	}
	if prev == nil || prev.Digest != art.Digest || !wasReady {
		r.event(obj, b)
	}
	return b, nil
}

// event emits the build summary, Flux's event for a new artifact and for a
// recovery, with the artifact's revision and digest.
func (r *HelmChartReconciler) event(obj *sourcev1.HelmChart, b *chart.Build) {
	r.Events.Event(obj, corev1.EventTypeNormal, b.Reason(), b.Summary(), map[string]string{
		sourcev1.GroupVersion.Group + "/revision": obj.Status.Artifact.Revision,
		sourcev1.GroupVersion.Group + "/digest":   obj.Status.Artifact.Digest,
	})
}

func linkPath(a meta.Artifact) string {
	if i := strings.LastIndex(a.Path, "/"); i >= 0 {
		return a.Path[:i+1] + "latest.tar.gz"
	}
	return "latest.tar.gz"
}

// getSource gets the object spec.sourceRef names. Flux compatible: an
// unsupported kind stalls (UnsupportedSourceKind), a source that cannot be
// read is retried (SourceUnavailable), one without artifact is waited for
// (NoSourceArtifact; OCI HelmRepositories have none).
func (r *HelmChartReconciler) getSource(ctx context.Context, obj *sourcev1.HelmChart) (client.Object, *reconciler.Failure) {
	ref := obj.Spec.SourceRef
	var src client.Object
	switch ref.Kind {
	case sourcev1.GitRepositoryKind:
		src = &sourcev1.GitRepository{}
	case sourcev1.HelmRepositoryKind:
		src = &sourcev1.HelmRepository{}
	case sourcev1.BucketKind:
		src = &sourcev1.Bucket{}
	default:
		return nil, fetchFailed(sourcev1.UnsupportedSourceKindReason, "failed to get source: unsupported source kind '%s', must be one of: [%s %s Bucket]",
			ref.Kind, sourcev1.HelmRepositoryKind, sourcev1.GitRepositoryKind).Stall()
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: ref.Name}, src); err != nil {
		return nil, fetchFailed(sourcev1.SourceUnavailableReason, "failed to get source: %s", err)
	}
	var art *meta.Artifact
	switch s := src.(type) {
	case *sourcev1.GitRepository:
		art = s.Status.Artifact
	case *sourcev1.Bucket:
		art = s.Status.Artifact
	case *sourcev1.HelmRepository:
		if s.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
			return src, nil
		}
		art = s.Status.Artifact
	}
	// Checked before the file is looked at: the status, path included, may be forged.
	if art != nil {
		if err := r.Signer.verify(ctx, ref.Kind, src, art); err != nil {
			return nil, fetchFailed(sourcev1.SourceUnavailableReason, "failed to get source: %s", err)
		}
	}
	if art == nil || !r.Storage.Exists(*art) {
		f := fetchFailed(sourcev1.NoSourceArtifactReason, "no artifact available for %s source '%s'", ref.Kind, ref.Name)
		f.Waiting = true
		return nil, f
	}
	obj.Status.ObservedSourceArtifactRevision = art.Revision
	return src, nil
}

// cached describes the stored artifact for the builder; Force rebuilds
// when the spec changed since it was built.
func cached(obj *sourcev1.HelmChart) (*chart.Cached, bool) {
	force := obj.Generation != obj.Status.ObservedGeneration
	if a := obj.Status.Artifact; a != nil && obj.Status.ObservedChartName != "" {
		return &chart.Cached{Name: obj.Status.ObservedChartName, Version: a.Revision, ValuesFiles: obj.Status.ObservedValuesFiles}, force
	}
	return nil, force
}

// buildFromTarball extracts the source artifact (digest verified) and
// packages the chart at spec.chart in it.
func (r *HelmChartReconciler) buildFromTarball(ctx context.Context, obj *sourcev1.HelmChart, src *meta.Artifact) (*chart.Build, *reconciler.Failure) {
	dir, err := os.MkdirTemp("", "helmchart-")
	if err != nil {
		return nil, fetchFailed(sourcev1.DirCreationFailedReason, "failed to create temporary working directory")
	}
	defer os.RemoveAll(dir)
	if err := r.Storage.Verify(*src); err != nil {
		return nil, fetchFailed(meta.FailedReason, "source artifact verification failed: %s", strings.ReplaceAll(err.Error(), r.Storage.BasePath+"/", ""))
	}
	fh, err := os.Open(r.Storage.LocalPath(*src))
	if err != nil {
		return nil, fetchFailed(meta.FailedReason, "failed to open source artifact")
	}
	err = artifact.Extract(fh, dir, artifact.DefaultLimits)
	fh.Close()
	if err != nil {
		return nil, fetchFailed(meta.FailedReason, "artifact untar error: %s", strings.ReplaceAll(err.Error(), dir, "."))
	}
	// Flux compatible build metadata: the source hash's first 12 hex with
	// reconcileStrategy Revision, then the generation with valuesFiles.
	var metadata string
	if obj.Spec.ReconcileStrategy == sourcev1.ReconcileStrategyRevision {
		h := src.Revision[strings.LastIndex(src.Revision, ":")+1:]
		metadata = h[:min(12, len(h))]
	}
	if len(obj.Spec.ValuesFiles) > 0 {
		if metadata != "" {
			metadata += "."
		}
		metadata += strconv.FormatInt(obj.Generation, 10)
	}
	c, force := cached(obj)
	b, err := chart.BuildLocal(ctx, chart.LocalOptions{
		Root: dir, Path: obj.Spec.Chart, VersionMetadata: metadata,
		ValuesFiles: obj.Spec.ValuesFiles, IgnoreMissingValuesFiles: obj.Spec.IgnoreMissingValuesFiles,
		Repositories: r.dependencyRepositories(obj.Namespace), Limits: r.Limits, Cached: c, Force: force,
	})
	if err != nil {
		return nil, buildFailure(err, dir)
	}
	return b, nil
}

// buildFromHelmRepository pulls spec.chart at spec.version from the
// HelmRepository: its stored index (type default) or its OCI registry.
func (r *HelmChartReconciler) buildFromHelmRepository(ctx context.Context, obj *sourcev1.HelmChart, hr *sourcev1.HelmRepository) (*chart.Build, *reconciler.Failure) {
	ctx, cancel := context.WithTimeout(ctx, repositoryTimeout(hr))
	defer cancel()
	repo, f := r.chartRepository(ctx, hr)
	if f != nil {
		return nil, f
	}
	verify, f := r.chartVerify(ctx, obj, hr)
	if f != nil {
		return nil, f
	}
	var metadata string
	if len(obj.Spec.ValuesFiles) > 0 {
		metadata = strconv.FormatInt(obj.Generation, 10)
	}
	c, force := cached(obj)
	b, err := chart.BuildRemote(ctx, repo, chart.RemoteOptions{
		Name: obj.Spec.Chart, Version: obj.Spec.Version, VersionMetadata: metadata,
		ValuesFiles: obj.Spec.ValuesFiles, IgnoreMissingValuesFiles: obj.Spec.IgnoreMissingValuesFiles,
		Limits: r.Limits, Cached: c, Force: force, Verify: verify,
	})
	if err != nil {
		return nil, buildFailure(err, "")
	}
	return b, nil
}

// buildFailure maps a build error to its condition: BuildFailed for
// packaging steps, FetchFailed otherwise; persistent kinds stall. dir, the
// work directory, is removed from the message.
func buildFailure(err error, dir string) *reconciler.Failure {
	var be *chart.BuildError
	if !errors.As(err, &be) {
		be = &chart.BuildError{Kind: chart.Kind{Reason: meta.FailedReason, Summary: "unknown build error"}, Err: err}
	}
	msg := be.Error()
	if dir != "" {
		msg = strings.ReplaceAll(msg, dir+"/", "")
		msg = strings.ReplaceAll(msg, dir, ".")
	}
	f := fetchFailed(be.Kind.Reason, "%s", msg)
	if be.Kind.Build {
		f.Condition = sourcev1.BuildFailedCondition
	}
	f.Stalled = be.Kind.Persistent
	return f
}

// summarize writes the conditions for the outcome. Flux compatible: Ready
// is the build summary with ChartPullSucceeded/ChartPackageSucceeded, or
// the failing condition.
func (r *HelmChartReconciler) summarize(obj *sourcev1.HelmChart, b *chart.Build, recErr *reconciler.Failure) {
	reconciler.RemoveConditions(obj, sourcev1.FetchFailedCondition, sourcev1.BuildFailedCondition,
		sourcev1.StorageOperationFailedCondition)
	recordChartVerification(obj, b, recErr)
	if obj.Status.Artifact == nil {
		reconciler.RemoveConditions(obj, sourcev1.ArtifactInStorageCondition)
	}
	if recErr == nil {
		reconciler.RemoveConditions(obj, sourcev1.ArtifactOutdatedCondition)
		reconciler.SetCondition(obj, sourcev1.ArtifactInStorageCondition, metav1.ConditionTrue, b.Reason(), b.Summary())
		reconciler.Summarize(obj, nil, b.Reason(), b.Summary())
		return
	}
	status := metav1.ConditionTrue // the failure conditions are abnormal-true
	if recErr.Condition == sourcev1.SourceVerifiedCondition {
		status = metav1.ConditionFalse
	}
	reconciler.SetCondition(obj, recErr.Condition, status, recErr.Reason, recErr.Message)
	reconciler.Summarize(obj, recErr, "", "")
	eventType := corev1.EventTypeWarning
	if recErr.Waiting {
		eventType = events.EventTypeTrace
	}
	r.Events.Event(obj, eventType, recErr.Reason, recErr.Message, nil)
}
