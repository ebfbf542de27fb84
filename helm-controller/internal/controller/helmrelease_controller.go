package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/helm-controller/internal/drift"
	"github.com/eddyops/eddy/helm-controller/internal/release"
	"github.com/eddyops/eddy/helm-controller/internal/values"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/cel"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/remotecluster"
	"github.com/fluxcd/pkg/apis/meta"
	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Labels set on the HelmChart generated from spec.chart, naming its
// HelmRelease. Flux compatible.
const (
	NameLabel      = "helm.toolkit.fluxcd.io/name"
	NamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
)

// HelmReleaseReconciler installs, upgrades, tests, rolls back and
// uninstalls the Helm release of each HelmRelease with the Helm v3 SDK.
// Flux compatible: the pipeline, state machine, conditions, messages and
// events of helm-controller (contract §1.6, §5; 2.10 §2.1).
type HelmReleaseReconciler struct {
	client.Client
	// APIReader reads dependencies bypassing the cache, as Flux does.
	APIReader client.Reader
	Config    *rest.Config
	Fetcher   *artifact.Fetcher
	Events    *events.Recorder
	// NoCrossNamespaceRefs refuses sources in other namespaces.
	NoCrossNamespaceRefs bool
	// DefaultServiceAccount is impersonated when spec.serviceAccountName is empty.
	DefaultServiceAccount string
	// KubeConfig are the switches for spec.kubeConfig's kubeconfigs.
	KubeConfig remotecluster.KubeConfigOptions
	// RequeueDependency is the wait for a source or dependency (Flux: 30s).
	RequeueDependency time.Duration
	// HealthPoll is the poll interval of the kstatus wait (default 2s).
	HealthPoll    time.Duration
	JitterPercent float64
	// DisableChartDigestTracking leaves a chart from an OCIRepository at its
	// own version (--feature-gates=DisableChartDigestTracking=true).
	DisableChartDigestTracking bool
	// AdditiveCELDependencyCheck requires a dependency with a readyExpr to
	// be Ready too (--feature-gates=AdditiveCELDependencyCheck=true).
	AdditiveCELDependencyCheck bool
	// AllowExternalArtifact lets spec.chartRef name an ExternalArtifact
	// (--feature-gates=ExternalArtifact=true). Flux compatible.
	AllowExternalArtifact bool

	waits waits
}

// failure is the skeleton's failed reconcile of a prerequisite.
type failure = reconciler.Failure

var fail = reconciler.Fail

// Reconcile brings one HelmRelease's Helm release to its spec. The skeleton
// (pkg/reconciler) runs the finalizer and suspend prologue and writes the
// status last; run does the rest.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := reconciler.Skeleton[*helmv2.HelmRelease]{
		Client:     r.Client,
		Kind:       helmv2.HelmReleaseKind,
		FieldOwner: ControllerName,
		Finalizer:  helmv2.HelmReleaseFinalizer,
		Finalize:   r.finalize,
		Suspended:  func(obj *helmv2.HelmRelease) bool { return obj.Spec.Suspend },
	}
	return skel.Reconcile(ctx, req, &helmv2.HelmRelease{}, r.run)
}

// Errors of the release phase that decide the result (Flux's
// internal/reconcile errors).
var (
	errMustRequeue        = errors.New("must requeue")
	errRetryAfterInterval = errors.New("retry after interval")
	errExceededMaxRetries = errors.New("exceeded maximum retries")
	errMissingRollback    = errors.New("missing target release for rollback")
)

// run reconciles a live, unsuspended HelmRelease and writes its status.
// status.observedGeneration is written only when the outcome is final for
// the generation: success, a wait for the retry interval, or a stall.
// Flux compatible.
func (r *HelmReleaseReconciler) run(ctx context.Context, obj *helmv2.HelmRelease, p *reconciler.StatusPatcher) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	reconciler.SetCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingReason, "Fulfilling prerequisites")
	// Ready=True goes with no Reconciling (kstatus); a failing Ready keeps
	// its reason until a step clears it.
	if apimeta.IsStatusConditionTrue(obj.Status.Conditions, meta.ReadyCondition) {
		reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "reconciliation in progress")
	}
	if err := p.Patch(ctx); err != nil {
		return ctrl.Result{}, err
	}
	rel, f := r.prerequisites(ctx, obj, p)
	if f != nil {
		reconciler.Summarize(obj, f, "", "")
		if err := p.Finish(ctx); err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case f.Waiting:
			log.Info(f.Message)
		case f.Reason == helmv2.DependencyNotReadyReason:
			r.Events.Event(obj, corev1.EventTypeNormal, f.Reason, f.Message, nil)
		case f.Reason == helmv2.ArtifactFailedReason || f.Reason == helmv2.ValuesErrorReason || f.Stalled:
			r.Events.Event(obj, corev1.EventTypeWarning, f.Reason, f.Message, nil)
		}
		if f.Stalled {
			return ctrl.Result{}, f
		}
		if f.Retry > 0 {
			return ctrl.Result{RequeueAfter: f.Retry}, nil
		}
		return ctrl.Result{}, errors.New(f.Message)
	}
	if rel == nil { // the release target changed: the old release is gone
		if err := p.Finish(ctx); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // Flux's immediate requeue
	}
	waitCtx, done := r.waits.start(ctx, obj.UID)
	rel.waitCtx = waitCtx
	err := r.atomicRelease(ctx, rel, p)
	done()
	terminal := errors.Is(err, errExceededMaxRetries) || errors.Is(err, errMissingRollback)
	var res ctrl.Result
	switch {
	case err == nil:
		res.RequeueAfter = controllerkit.Jitter(obj.Spec.Interval.Duration, r.JitterPercent)
	case errors.Is(err, errRetryAfterInterval):
		res.RequeueAfter = controllerkit.Jitter(activeRetryInterval(obj), r.JitterPercent)
	case errors.Is(err, errMustRequeue):
		res.Requeue = true //nolint:staticcheck // Flux's immediate requeue
	}
	if err == nil || terminal || errors.Is(err, errRetryAfterInterval) {
		obj.Status.ObservedGeneration = obj.Generation
	}
	if err := p.Finish(ctx); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case terminal:
		log.Error(err, "reconcile stalled")
		return ctrl.Result{}, crreconcile.TerminalError(err)
	case err == nil, errors.Is(err, errRetryAfterInterval), errors.Is(err, errMustRequeue):
		return res, nil
	}
	return ctrl.Result{}, err
}

// releaseRequest is what the release phase works on: the object, the loaded
// chart, the composed values and their digest, and the Helm access.
type releaseRequest struct {
	obj          *helmv2.HelmRelease
	chart        *chart.Chart
	values       map[string]any
	configDigest string
	// secrets are the values read from Secrets, masked in messages.
	secrets *values.Secrets
	getter  *restGetter
	// drift is the report of a Drifted state, for its correction.
	drift *drift.Report
	// waitCtx is what the waits for the release's objects run under: a
	// newer desired state cancels it (healthCheckCanceled).
	waitCtx context.Context
	// exprs are spec.healthCheckExprs, compiled (nil when none).
	exprs *cel.HealthChecks
}

// prerequisites runs the steps before the release: chart template,
// dependencies, source, values, chart download, release target change and
// failure counter reset. A nil request with a nil failure means the release
// target changed and the old release was uninstalled: requeue.
func (r *HelmReleaseReconciler) prerequisites(ctx context.Context, obj *helmv2.HelmRelease, p *reconciler.StatusPatcher) (*releaseRequest, *failure) {
	progressed := func(reasons ...string) {
		if c := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
			for _, reason := range reasons {
				if c.Reason == reason {
					reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, meta.ProgressingReason, "reconciliation in progress")
				}
			}
		}
	}
	if f := kubeConfigRefusal(obj); f != nil {
		return nil, f
	}
	exprs, f := healthCheckExprs(obj)
	if f != nil {
		return nil, f
	}
	applied, f := r.reconcileChartTemplate(ctx, obj)
	if f != nil {
		return nil, f
	}
	if f := r.checkDependencies(ctx, obj); f != nil {
		return nil, f
	}
	progressed(helmv2.DependencyNotReadyReason)
	src, f := r.source(ctx, obj, applied)
	if f != nil {
		return nil, f
	}
	progressed(helmv2.ArtifactFailedReason, helmv2.SourceNotReadyReason)
	vals, secrets, err := values.ComposeSecret(ctx, r.Client, obj)
	if err != nil {
		return nil, fail(helmv2.ValuesErrorReason, "%s", err)
	}
	progressed(helmv2.ValuesErrorReason)
	ch, ociDigest, f := r.loadChart(ctx, src)
	if f != nil {
		return nil, f
	}
	progressed(helmv2.ArtifactFailedReason, helmv2.ChartMutateErrorReason)
	getter, err := r.getterFor(ctx, obj)
	if err != nil {
		return nil, fail(helmv2.RESTClientErrorReason, "%s", err)
	}
	progressed(helmv2.RESTClientErrorReason)
	req := &releaseRequest{obj: obj, chart: ch, values: vals, configDigest: values.Digest(vals), secrets: secrets, getter: getter, exprs: exprs}

	// status.history is kept newest first; one written in another order
	// (by hand, by another controller) is put in order here, once.
	release.Sort(obj.Status.History)
	if reason, changed := releaseTargetChanged(obj, ch.Name()); changed {
		ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("release target configuration changed (%s): running uninstall for current release", reason))
		if err := r.uninstallCurrent(ctx, obj); err != nil {
			return nil, fail(helmv2.UninstallFailedReason, "%s", err)
		}
		obj.Status.History = nil
		clearFailures(obj)
		obj.Status.StorageNamespace = ""
		return nil, nil
	}
	obj.Status.StorageNamespace = release.StorageNamespace(obj)

	if v, ok := handledRequest(obj, helmv2.ResetRequestAnnotation, obj.Status.LastHandledResetAt); ok {
		obj.Status.LastHandledResetAt = v
		clearFailures(obj)
	}
	if mustResetFailures(obj, ch, req.configDigest) {
		clearFailures(obj)
	}
	obj.Status.LastAttemptedGeneration = obj.Generation
	obj.Status.LastAttemptedRevision = ch.Metadata.Version
	obj.Status.LastAttemptedRevisionDigest = ociDigest
	obj.Status.LastAttemptedConfigDigest = req.configDigest
	obj.Status.LastAttemptedValuesChecksum = ""
	obj.Status.LastReleaseRevision = 0
	return req, nil
}

// checkDependencies evaluates spec.dependsOn (reconciler.Dependencies).
func (r *HelmReleaseReconciler) checkDependencies(ctx context.Context, obj *helmv2.HelmRelease) *failure {
	return reconciler.Dependencies[*helmv2.HelmRelease]{
		Reader:      r.APIReader,
		New:         func() *helmv2.HelmRelease { return &helmv2.HelmRelease{} },
		Retry:       r.RequeueDependency,
		AdditiveCEL: r.AdditiveCELDependencyCheck,
	}.Check(ctx, obj, obj.Spec.DependsOn)
}

// serviceAccount is spec.serviceAccountName, else --default-service-account.
func (r *HelmReleaseReconciler) serviceAccount(obj *helmv2.HelmRelease) string {
	if obj.Spec.ServiceAccountName != "" {
		return obj.Spec.ServiceAccountName
	}
	return r.DefaultServiceAccount
}

// getterFor returns Helm's REST access for obj: to its cluster
// (clusterConfig), impersonating `system:serviceaccount:<ns>:<serviceAccountName>`
// there when one is set, with the release namespace as default namespace.
func (r *HelmReleaseReconciler) getterFor(ctx context.Context, obj *helmv2.HelmRelease) (*restGetter, error) {
	cfg, err := r.clusterConfig(ctx, obj)
	if err != nil {
		return nil, err
	}
	if sa := r.serviceAccount(obj); sa != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", obj.Namespace, sa)}
	}
	return &restGetter{cfg: cfg, namespace: release.Namespace(obj)}, nil
}

// handledRequest returns the value of annotation on obj when it equals
// reconcile.fluxcd.io/requestedAt and differs from last (not yet handled).
// Flux compatible (forceAt, resetAt).
func handledRequest(obj *helmv2.HelmRelease, annotation, last string) (string, bool) {
	v, ok := obj.GetAnnotations()[annotation]
	if !ok || v == "" {
		return "", false
	}
	req, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations())
	if !ok || req != v || v == last {
		return "", false
	}
	return v, true
}
