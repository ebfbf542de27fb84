// Package controller holds notification-controller's reconcilers: Receiver
// (status.webhookPath and Ready), and Alert and Provider, which have no
// status in Flux's v1beta3 and are only checked, with problems reported as
// Warning events on the object.
package controller

import (
	"context"
	"fmt"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/notification-controller/webhook"
	eddyruntime "github.com/eddyops/eddy/pkg/runtime"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options tune the controllers' work queues.
type Options struct {
	Concurrent         int
	MinRetry, MaxRetry time.Duration
}

func (o Options) controller() controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: max(o.Concurrent, 1),
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.MinRetry, o.MaxRetry),
	}
}

// ReceiverReconciler keeps a Receiver's status: webhookPath computed from
// its secret's token, Ready, observedGeneration and lastHandledReconcileAt.
// Flux compatible: Ready=True reason Succeeded with message `Receiver
// initialized for path: <path>`; Ready=False TokenNotFound when the secret
// or its `token` key is missing; requeued every spec.interval (10m).
type ReceiverReconciler struct {
	client.Client
	// Secrets reads the token Secrets (uncached).
	Secrets       client.Reader
	JitterPercent float64
}

// SetupWithManager registers the reconciler and the webhookPath index the
// receiver server needs.
func (r *ReceiverReconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &notificationv1.Receiver{}, server.WebhookPathIndex, server.IndexWebhookPath); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&notificationv1.Receiver{}, builder.WithPredicates(eddyruntime.ReconcileOnChange())).
		WithOptions(opts.controller()).
		Complete(r)
}

// Reconcile computes the receiver's path and status.
func (r *ReceiverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &notificationv1.Receiver{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Flux's v1 Receiver had a finalizer in older versions; nothing needs it.
	if controllerutilRemoveFinalizer(obj) {
		if err := r.Update(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	if obj.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	base := obj.DeepCopy()
	reason, msg := r.observe(ctx, obj)
	status := metav1.ConditionTrue
	if reason != meta.SucceededReason {
		status = metav1.ConditionFalse
	}
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
		Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.Generation,
	})
	obj.Status.ObservedGeneration = obj.Generation
	if v, ok := obj.Annotations[meta.ReconcileRequestAnnotation]; ok {
		obj.Status.LastHandledReconcileAt = v
	}
	if err := r.Status().Patch(ctx, obj, client.MergeFrom(base), client.FieldOwner("notification-controller")); err != nil {
		return ctrl.Result{}, err
	}
	interval := 10 * time.Minute
	if obj.Spec.Interval != nil {
		interval = obj.Spec.Interval.Duration
	}
	return ctrl.Result{RequeueAfter: eddyruntime.Jitter(interval, r.JitterPercent)}, nil
}

// observe sets status.webhookPath and returns the Ready reason and message.
func (r *ReceiverReconciler) observe(ctx context.Context, obj *notificationv1.Receiver) (string, string) {
	if !server.SupportedReceiverType(obj.Spec.Type) {
		obj.Status.WebhookPath = ""
		return notificationv1.ValidationFailedReason, fmt.Sprintf("receiver type %s is not supported by Eddy", obj.Spec.Type)
	}
	if obj.Spec.ResourceFilter != "" {
		obj.Status.WebhookPath = ""
		return notificationv1.ValidationFailedReason, "resourceFilter (CEL) is not supported by Eddy yet"
	}
	for _, res := range obj.Spec.Resources {
		if res.Filter != "" {
			obj.Status.WebhookPath = ""
			return notificationv1.ValidationFailedReason, "resources[].filter (CEL) is not supported by Eddy yet"
		}
	}
	if obj.Spec.SecretRef == nil {
		obj.Status.WebhookPath = ""
		return notificationv1.TokenNotFoundReason, "spec.secretRef is not set"
	}
	sec := &corev1.Secret{}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	if err := r.Secrets.Get(ctx, key, sec); err != nil {
		obj.Status.WebhookPath = ""
		what := "cannot be read"
		if apierrors.IsNotFound(err) {
			what = "not found"
		}
		return notificationv1.TokenNotFoundReason, fmt.Sprintf("unable to read token from secret '%s': %s", key, what)
	}
	token, ok := sec.Data["token"]
	if !ok || len(token) == 0 {
		obj.Status.WebhookPath = ""
		return notificationv1.TokenNotFoundReason, fmt.Sprintf("invalid '%s' secret data: required field 'token'", key)
	}
	obj.Status.WebhookPath = webhook.Path(string(token), obj.Name, obj.Namespace)
	return meta.SucceededReason, "Receiver initialized for path: " + obj.Status.WebhookPath
}
