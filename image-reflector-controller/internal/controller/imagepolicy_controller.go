package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-reflector-controller/internal/policy"
	"github.com/eddyops/eddy/image-reflector-controller/internal/registry"
	"github.com/eddyops/eddy/image-reflector-controller/internal/storage"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// MutableTagCondition is Eddy's condition (beyond Flux) on an ImagePolicy
// whose latest tag is judged mutable (policy.IsMutable): True with reason
// MutableTagReason while it resolves to one, absent otherwise.
const (
	MutableTagCondition = "MutableTag"
	MutableTagReason    = "MutableTagSelected"
)

// Reasons of Flux's ImagePolicy and ImageRepository that Eddy's API
// package does not define (Flux: metav1.StatusFailure, and fluxcd/pkg's
// ACL AccessDenied).
const (
	FailureReason      = "Failure"
	AccessDeniedReason = "AccessDenied"
)

// repositoryRefIndex indexes ImagePolicies by "<namespace>/<name>" of
// their ImageRepository.
const repositoryRefIndex = ".spec.imageRepositoryRef"

// ImagePolicyReconciler resolves an ImagePolicy against the tags its
// ImageRepository's last scan stored: it never lists tags itself, and
// calls the registry only for a digest (spec.digestReflectionPolicy).
type ImagePolicyReconciler struct {
	client.Client
	Secrets              client.Reader
	Registry             *registry.Client
	Store                *storage.Store
	Events               *events.Recorder
	NoCrossNamespaceRefs bool
	// RequeueDependency is --requeue-dependency: the wait before retrying
	// a policy whose repository is missing or not scanned.
	RequeueDependency time.Duration
}

func repositoryKey(p *imagev1.ImagePolicy) client.ObjectKey {
	ns := p.Spec.ImageRepositoryRef.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: p.Spec.ImageRepositoryRef.Name}
}

// SetupWithManager registers the reconciler: ImagePolicies on a new
// generation or reconcile request, and those of an ImageRepository whose
// scan revision changed.
func (r *ImagePolicyReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &imagev1.ImagePolicy{}, repositoryRefIndex,
		func(o client.Object) []string { return []string{repositoryKey(o.(*imagev1.ImagePolicy)).String()} }); err != nil {
		return err
	}
	policies := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &imagev1.ImagePolicyList{} },
		func(o client.Object) []client.ListOption {
			return []client.ListOption{client.MatchingFields{repositoryRefIndex: client.ObjectKeyFromObject(o).String()}}
		})
	return ctrl.NewControllerManagedBy(mgr).
		For(&imagev1.ImagePolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&imagev1.ImageRepository{}, policies, builder.WithPredicates(revisionChanged{})).
		WithOptions(opts).
		Complete(r)
}

// revisionChanged passes an ImageRepository whose
// status.lastScanResult.revision changed, or that was created or deleted.
type revisionChanged struct{ predicate.Funcs }

func (revisionChanged) Update(e event.UpdateEvent) bool {
	rev := func(o client.Object) string {
		if res := o.(*imagev1.ImageRepository).Status.LastScanResult; res != nil {
			return res.Revision
		}
		return ""
	}
	return rev(e.ObjectOld) != rev(e.ObjectNew)
}

func (r *ImagePolicyReconciler) skeleton() *reconciler.Skeleton[*imagev1.ImagePolicy] {
	return &reconciler.Skeleton[*imagev1.ImagePolicy]{
		Client: r.Client, Kind: imagev1.ImagePolicyKind, FieldOwner: ControllerName,
		LegacyFinalizers: []string{imagev1.ImageFinalizer},
		Suspended:        func(obj *imagev1.ImagePolicy) bool { return obj.Spec.Suspend },
	}
}

// Reconcile resolves the policy and writes status.latestRef.
func (r *ImagePolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.skeleton().Reconcile(ctx, req, &imagev1.ImagePolicy{},
		func(ctx context.Context, obj *imagev1.ImagePolicy, p *reconciler.StatusPatcher) (ctrl.Result, error) {
			before := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition).DeepCopy()
			f := r.reconcile(ctx, obj)
			msg := ""
			if f == nil {
				msg = readyPolicyMessage(obj)
			} else {
				obj.Status.ObservedPreviousRef = nil
			}
			reconciler.Summarize(obj, f, meta.SucceededReason, msg)
			if err := p.Finish(ctx); err != nil {
				return ctrl.Result{}, err
			}
			r.notify(obj, before, f)
			return resultOf(f, obj.GetInterval())
		})
}

func (r *ImagePolicyReconciler) notify(obj *imagev1.ImagePolicy, before *metav1.Condition, f *reconciler.Failure) {
	after := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	if r.Events == nil || after == nil || (before != nil && before.Status == after.Status && before.Message == after.Message) {
		return
	}
	if f != nil {
		if !f.Waiting {
			r.Events.Event(obj, corev1.EventTypeWarning, f.Reason, f.EventMessage(), nil)
		}
		return
	}
	r.Events.Event(obj, corev1.EventTypeNormal, meta.SucceededReason, after.Message, nil)
	if c := apimeta.FindStatusCondition(obj.Status.Conditions, MutableTagCondition); c != nil {
		r.Events.Event(obj, corev1.EventTypeWarning, MutableTagReason, c.Message, nil)
	}
}

// readyPolicyMessage is Flux's Ready message of a resolved policy.
func readyPolicyMessage(obj *imagev1.ImagePolicy) string {
	ref := obj.Status.LatestRef
	msg := fmt.Sprintf("Latest image tag for %s resolved to %s", ref.Name, ref.Tag)
	if ref.Digest != "" {
		msg += " with digest " + ref.Digest
	}
	if prev := obj.Status.ObservedPreviousRef; prev != nil && *prev != *ref {
		msg += fmt.Sprintf(" (previously %s:%s", prev.Name, prev.Tag)
		if prev.Digest != "" {
			msg += "@" + prev.Digest
		}
		msg += ")"
	}
	return msg
}

// policer builds the policy and filter of the spec; an invalid spec is a
// stalled InvalidPolicy Failure.
func policer(obj *imagev1.ImagePolicy) (policy.Policer, *policy.Filter, *reconciler.Failure) {
	invalid := func(err error) (policy.Policer, *policy.Filter, *reconciler.Failure) {
		return nil, nil, reconciler.Fail(imagev1.InvalidPolicyReason, "invalid policy: %s", err).Stall()
	}
	var p policy.Policer
	var err error
	choice, n := obj.Spec.Policy, 0
	if choice.SemVer != nil {
		n++
		p, err = policy.NewSemVer(choice.SemVer.Range)
	}
	if choice.Alphabetical != nil {
		n++
		p, err = policy.NewAlphabetical(choice.Alphabetical.Order)
	}
	if choice.Numerical != nil {
		n++
		p, err = policy.NewNumerical(choice.Numerical.Order)
	}
	if n != 1 {
		return invalid(errors.New("spec.policy must set exactly one of semver, alphabetical, numerical"))
	}
	if err != nil {
		return invalid(err)
	}
	var f *policy.Filter
	if ft := obj.Spec.FilterTags; ft != nil {
		if f, err = policy.NewFilter(ft.Pattern, ft.Extract); err != nil {
			return invalid(err)
		}
	}
	return p, f, nil
}

// reconcile resolves obj into status.latestRef (and observedPreviousRef),
// setting or removing the MutableTag condition, or returns a Failure.
func (r *ImagePolicyReconciler) reconcile(ctx context.Context, obj *imagev1.ImagePolicy) *reconciler.Failure {
	if obj.GetDigestReflectionPolicy() == imagev1.ReflectAlways && obj.Spec.Interval == nil {
		return reconciler.Fail(imagev1.IntervalNotConfiguredReason,
			"spec.interval is required when spec.digestReflectionPolicy is Always").Stall()
	}
	pol, filter, f := policer(obj)
	if f != nil {
		return f
	}
	repo, f := r.repository(ctx, obj)
	if f != nil {
		return f
	}
	if f := identityFailure(repo, "spec.serviceAccountName in the ImageRepository"); f != nil {
		return f
	}
	tags, _, err := r.Store.Tags(repo.Namespace, repo.Name)
	if err != nil {
		return reconciler.Fail(FailureReason, "%s", err)
	}
	if repo.Status.LastScanResult == nil || tags == nil {
		return r.waiting("ImageRepository '%s/%s' has no scanned tags yet", repo.Namespace, repo.Name)
	}
	tag, err := policy.Select(pol, filter, tags)
	if err != nil {
		return reconciler.Fail(FailureReason, "%s", err)
	}
	ref := &imagev1.ImageRef{Name: repo.Spec.Image, Tag: tag}
	if f := r.reflectDigest(ctx, obj, repo, ref); f != nil {
		return f
	}
	if old := obj.Status.LatestRef; old == nil || *old != *ref {
		obj.Status.ObservedPreviousRef = old
		obj.Status.LatestRef = ref
	}
	if policy.IsMutable(tag) {
		reconciler.SetCondition(obj, MutableTagCondition, metav1.ConditionTrue, MutableTagReason, mutableMessage(obj, tag))
	} else {
		reconciler.RemoveConditions(obj, MutableTagCondition)
	}
	return nil
}

func mutableMessage(obj *imagev1.ImagePolicy, tag string) string {
	msg := fmt.Sprintf("the policy resolves to tag %q, which is moved to new images: select version tags", tag)
	if obj.GetDigestReflectionPolicy() == imagev1.ReflectNever {
		msg += ", or pin the digest with digestReflectionPolicy IfNotPresent or Always and a :digest marker"
	}
	return msg
}

func (r *ImagePolicyReconciler) waiting(format string, args ...any) *reconciler.Failure {
	f := reconciler.Fail(imagev1.DependencyNotReadyReason, format+", retrying in %s",
		append(args, r.RequeueDependency.Round(time.Second))...)
	f.Waiting, f.Retry = true, r.RequeueDependency
	return f
}

// reflectDigest sets ref.Digest as spec.digestReflectionPolicy says:
// Never leaves it empty, IfNotPresent keeps the digest of an unchanged
// name and tag, Always fetches it (HEAD manifest) at every reconcile.
func (r *ImagePolicyReconciler) reflectDigest(ctx context.Context, obj *imagev1.ImagePolicy, repo *imagev1.ImageRepository, ref *imagev1.ImageRef) *reconciler.Failure {
	old := obj.Status.LatestRef
	switch obj.GetDigestReflectionPolicy() {
	case imagev1.ReflectNever:
		return nil
	case imagev1.ReflectIfNotPresent:
		if old != nil && old.Name == ref.Name && old.Tag == ref.Tag && old.Digest != "" {
			ref.Digest = old.Digest
			return nil
		}
	}
	opts, err := registryOptions(ctx, r.Secrets, repo)
	if err != nil {
		return reconciler.Fail(imagev1.AuthenticationFailedReason, "failed to configure authentication options: %s", err)
	}
	d, err := r.Registry.Digest(ctx, repo.Spec.Image, ref.Tag, opts)
	if err != nil {
		return reconciler.Fail(FailureReason, "failed fetching digest of %s: %s", ref.String(), err)
	}
	ref.Digest = d
	return nil
}

// repository gets obj's ImageRepository, checking cross-namespace access
// (--no-cross-namespace-refs, the repository's spec.accessFrom).
func (r *ImagePolicyReconciler) repository(ctx context.Context, obj *imagev1.ImagePolicy) (*imagev1.ImageRepository, *reconciler.Failure) {
	key := repositoryKey(obj)
	if key.Namespace != obj.Namespace && r.NoCrossNamespaceRefs {
		return nil, reconciler.Fail(AccessDeniedReason,
			"cannot access '%s/%s', cross-namespace references have been blocked", imagev1.ImageRepositoryKind, key).Stall()
	}
	repo := &imagev1.ImageRepository{}
	if err := r.Get(ctx, key, repo); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, r.waiting("referenced ImageRepository '%s' does not exist", key)
		}
		return nil, reconciler.Fail(FailureReason, "getting ImageRepository '%s': %s", key, err)
	}
	if key.Namespace == obj.Namespace {
		return repo, nil
	}
	if f := r.checkAccess(ctx, obj, repo); f != nil {
		return nil, f
	}
	return repo, nil
}

// checkAccess allows a policy of another namespace when the repository's
// spec.accessFrom has a selector matching that namespace's labels.
func (r *ImagePolicyReconciler) checkAccess(ctx context.Context, obj *imagev1.ImagePolicy, repo *imagev1.ImageRepository) *reconciler.Failure {
	denied := reconciler.Fail(AccessDeniedReason, "access denied: ImageRepository '%s/%s' does not allow access from namespace '%s' (spec.accessFrom)",
		repo.Namespace, repo.Name, obj.Namespace)
	if repo.Spec.AccessFrom == nil {
		return denied
	}
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: obj.Namespace}, ns); err != nil {
		return reconciler.Fail(FailureReason, "getting namespace '%s': %s", obj.Namespace, reasonOf(err))
	}
	for _, sel := range repo.Spec.AccessFrom.NamespaceSelectors {
		match := true
		for k, v := range sel.MatchLabels {
			if ns.Labels[k] != v {
				match = false
			}
		}
		if match {
			return nil
		}
	}
	return denied
}
