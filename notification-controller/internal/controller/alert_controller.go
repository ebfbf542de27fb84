package controller

import (
	"context"
	"fmt"
	"regexp"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// legacyFinalizer is the finalizer older Flux versions put on Alerts,
// Providers and Receivers; v1beta3 controllers remove it. Flux compatible.
const legacyFinalizer = "finalizers.fluxcd.io"

// AlertReconciler checks an Alert when it or its Provider changes: its
// regexps compile and its Provider is of a type Eddy delivers to. Problems
// become Warning events (reason InvalidConfig) on the Alert; the event
// server reports them again when an event would use the Alert. A Provider
// that does not exist yet is a wait, not a failure (an
// Alert is often applied a moment before its Provider, as kustomize orders
// kinds alphabetically): a Normal event (reason DependencyNotReady), a
// requeue, and the Alert is checked again when the Provider appears.
// Flux's v1beta3 Alert has no status, so none is written.
type AlertReconciler struct {
	client.Client
	Recorder record.EventRecorder
}

// ProviderRefIndex is the field index of Alerts by spec.providerRef.name.
const ProviderRefIndex = ".spec.providerRef.name"

// providerRequeue is how soon an Alert waiting for its Provider is checked
// again if no watch event of the Provider comes first.
const providerRequeue = time.Minute

// SetupWithManager registers the reconciler, the Alert index by Provider
// name and the watch of Providers.
func (r *AlertReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &notificationv1.Alert{}, ProviderRefIndex, func(o client.Object) []string {
		return []string{o.(*notificationv1.Alert).Spec.ProviderRef.Name}
	}); err != nil {
		return err
	}
	// A Provider's change checks the Alerts whose spec.providerRef names it.
	alerts := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &notificationv1.AlertList{} },
		func(p client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(p.GetNamespace()), client.MatchingFields{ProviderRefIndex: p.GetName()}}
		})
	return ctrl.NewControllerManagedBy(mgr).
		For(&notificationv1.Alert{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&notificationv1.Provider{}, alerts, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Complete(r)
}

// Reconcile checks one Alert.
func (r *AlertReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Alert{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := reconciler.RemoveFinalizers(ctx, r.Client, obj, ControllerName, legacyFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	if !obj.DeletionTimestamp.IsZero() || obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	for field, list := range map[string][]string{"inclusionList": obj.Spec.InclusionList, "exclusionList": obj.Spec.ExclusionList} {
		for _, expr := range list {
			if _, err := regexp.Compile(expr); err != nil {
				r.Recorder.Event(obj, corev1.EventTypeWarning, server.InvalidConfigReason, fmt.Sprintf("%s: invalid regexp %q: %v", field, expr, err))
			}
		}
	}
	p := &notificationv1.Provider{}
	err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.ProviderRef.Name}, p)
	switch {
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("provider %s not found, retrying", obj.Spec.ProviderRef.Name)
		ctrl.LoggerFrom(ctx).Info(msg)
		r.Recorder.Event(obj, corev1.EventTypeNormal, meta.DependencyNotReadyReason, msg)
		return ctrl.Result{RequeueAfter: providerRequeue}, nil
	case err != nil:
		return ctrl.Result{}, err
	default:
		if !notifier.Supported(p.Spec.Type) {
			r.Recorder.Event(obj, corev1.EventTypeWarning, server.InvalidConfigReason, fmt.Sprintf("provider %s: type %s is not supported by Eddy", p.Name, p.Spec.Type))
		}
	}
	return ctrl.Result{}, nil
}

// ProviderReconciler removes the legacy finalizer from Providers; a
// Provider has no status. Flux compatible.
type ProviderReconciler struct {
	client.Client
}

// SetupWithManager registers the reconciler.
func (r *ProviderReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&notificationv1.Provider{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Complete(r)
}

// Reconcile strips the legacy finalizer.
func (r *ProviderReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Provider{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, reconciler.RemoveFinalizers(ctx, r.Client, obj, ControllerName, legacyFinalizer)
}
