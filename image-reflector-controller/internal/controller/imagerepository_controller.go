package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-reflector-controller/internal/registry"
	"github.com/eddyops/eddy/image-reflector-controller/internal/storage"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// latestTagsCount is how many tags status.lastScanResult.latestTags keeps
// (Flux: the first 10 in descending string order).
const latestTagsCount = 10

// Why a scan happens (Flux's shouldScan), in the Reconciling message.
const (
	scanFirst         = "first scan"
	scanRequested     = "reconcile requested"
	scanNewImage      = "new image name"
	scanNewExclusions = "updated exclusion list"
	scanEmptyStore    = "no tags in the store"
	scanInterval      = "triggered by interval"
)

// ImageRepositoryReconciler scans an ImageRepository's registry repository
// every spec.interval and stores its tags (Store) for the ImagePolicies:
// one scan per repository, however many policies read it.
type ImageRepositoryReconciler struct {
	client.Client
	// Secrets reads the Secrets and ServiceAccounts the spec names
	// (uncached).
	Secrets  client.Reader
	Registry *registry.Client
	Store    *storage.Store
	Events   *events.Recorder
	// now is time.Now unless a test sets it.
	now func() time.Time
}

// SetupWithManager registers the reconciler: ImageRepositories on a new
// generation or reconcile request.
func (r *ImageRepositoryReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.now == nil {
		r.now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&imagev1.ImageRepository{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(opts).
		Complete(r)
}

func (r *ImageRepositoryReconciler) skeleton() *reconciler.Skeleton[*imagev1.ImageRepository] {
	return &reconciler.Skeleton[*imagev1.ImageRepository]{
		Client: r.Client, Kind: imagev1.ImageRepositoryKind, FieldOwner: ControllerName,
		Finalizer: imagev1.ImageFinalizer,
		Finalize: func(ctx context.Context, obj *imagev1.ImageRepository) (ctrl.Result, error) {
			return ctrl.Result{}, r.Store.Delete(obj.Namespace, obj.Name)
		},
		Suspended: func(obj *imagev1.ImageRepository) bool { return obj.Spec.Suspend },
		Gone:      func(key client.ObjectKey) { _ = r.Store.Delete(key.Namespace, key.Name) },
	}
}

// Reconcile scans the repository when due (shouldScan) and writes status.
func (r *ImageRepositoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.skeleton().Reconcile(ctx, req, &imagev1.ImageRepository{},
		func(ctx context.Context, obj *imagev1.ImageRepository, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			before := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition).DeepCopy()
			msg, next, f := r.reconcile(ctx, obj)
			reconciler.Summarize(obj, f, meta.SucceededReason, msg)
			if err := p.Finish(ctx); err != nil {
				return ctrl.Result{}, err
			}
			r.notify(obj, before, f)
			return resultOf(f, next)
		})
}

// notify emits an event when Ready changed (status or message): Normal for
// a success, Warning for a failure. A scan that changed nothing emits none.
func (r *ImageRepositoryReconciler) notify(obj *imagev1.ImageRepository, before *metav1.Condition, f *reconciler.Failure) {
	after := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	if r.Events == nil || after == nil || (before != nil && before.Status == after.Status && before.Message == after.Message) {
		return
	}
	if f != nil {
		r.Events.Event(obj, corev1.EventTypeWarning, f.Reason, f.EventMessage(), nil)
		return
	}
	r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, after.Message, nil)
}

// reconcile returns the Ready message and the wait until the next scan, or
// a Failure.
func (r *ImageRepositoryReconciler) reconcile(ctx context.Context, obj *imagev1.ImageRepository) (string, time.Duration, *reconciler.Failure) {
	if f := identityFailure(obj, "spec.serviceAccountName"); f != nil {
		return "", 0, f
	}
	canonical, err := registry.CanonicalName(obj.Spec.Image, obj.Spec.Insecure)
	if err != nil {
		return "", 0, reconciler.Fail(imagev1.ImageURLInvalidReason, "%s", err).Stall()
	}
	exclusions := obj.GetExclusionList()
	compiled, err := registry.CompileExclusions(exclusions)
	if err != nil {
		return "", 0, reconciler.Fail(imagev1.ReadOperationFailedReason, "%s", err).Stall()
	}
	opts, err := registryOptions(ctx, r.Secrets, obj)
	if err != nil {
		return "", 0, reconciler.Fail(imagev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	why, wait, err := r.shouldScan(obj, canonical, exclusions)
	if err != nil {
		return "", 0, reconciler.Fail(FailureReason, "%s", err)
	}
	if why == "" {
		res := obj.Status.LastScanResult
		return readyMessage(res.TagCount, res.Revision), wait, nil
	}
	reconciler.Progressing(obj, "scanning: "+why)
	result, err := r.Registry.ListTags(ctx, obj.Spec.Image, opts)
	if err != nil {
		f := reconciler.Fail(imagev1.ReadOperationFailedReason, "scan failed: %s", err)
		if until := r.Registry.BackoffUntil(registry.Host(canonical)); !until.IsZero() {
			f.Retry = until.Sub(r.now()) + time.Second
		}
		return "", 0, f
	}
	tags := registry.Exclude(result.Tags, compiled)
	rev, err := r.Store.Set(obj.Namespace, obj.Name, tags)
	if err != nil {
		return "", 0, reconciler.Fail(FailureReason, "%s", err)
	}
	obj.Status.CanonicalImageName = canonical
	obj.Status.ObservedExclusionList = slices.Clone(exclusions)
	obj.Status.LastScanResult = &imagev1.ScanResult{Revision: rev, TagCount: len(tags),
		ScanTime: metav1.NewTime(r.now()), LatestTags: latestTags(tags)}
	return readyMessage(len(tags), rev), obj.Spec.Interval.Duration, nil
}

func readyMessage(n int, rev string) string {
	return fmt.Sprintf("successful scan: found %d tags with checksum %s", n, rev)
}

// latestTags returns the first latestTagsCount of tags sorted in
// descending string order (Flux's, not semver).
func latestTags(tags []string) []string {
	s := slices.Clone(tags)
	sort.Sort(sort.Reverse(sort.StringSlice(s)))
	if len(s) > latestTagsCount {
		s = s[:latestTagsCount]
	}
	return s
}

// shouldScan returns why obj must be scanned now, or "" and the wait until
// its next scan (Flux's rules: never scanned, a reconcile request, a new
// canonical name or exclusion list, no stored tags, or the interval elapsed
// since the last scan, less than a second left counting as elapsed).
func (r *ImageRepositoryReconciler) shouldScan(obj *imagev1.ImageRepository, canonical string, exclusions []string) (string, time.Duration, error) {
	interval := obj.Spec.Interval.Duration
	res := obj.Status.LastScanResult
	if res == nil {
		return scanFirst, interval, nil
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok && v != obj.Status.GetLastHandledReconcileRequest() {
		return scanRequested, interval, nil
	}
	if canonical != obj.Status.CanonicalImageName {
		return scanNewImage, interval, nil
	}
	if !sameSet(exclusions, obj.Status.ObservedExclusionList) {
		return scanNewExclusions, interval, nil
	}
	tags, _, err := r.Store.Tags(obj.Namespace, obj.Name)
	if err != nil {
		return "", 0, err
	}
	if tags == nil {
		return scanEmptyStore, interval, nil
	}
	left := interval - r.now().Sub(res.ScanTime.Time)
	if left < time.Second {
		return scanInterval, interval, nil
	}
	return "", left, nil
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// resultOf is the controller-runtime result of a reconcile that ended in f:
// requeued after next when it succeeded, after f.Retry when f asks for a
// retry; otherwise f is the error.
func resultOf(f *reconciler.Failure, next time.Duration) (ctrl.Result, error) {
	switch {
	case f == nil:
		return ctrl.Result{RequeueAfter: next}, nil
	case f.Stalled:
		return ctrl.Result{}, f
	case f.Retry > 0:
		return ctrl.Result{RequeueAfter: f.Retry}, nil
	}
	return ctrl.Result{}, f
}
