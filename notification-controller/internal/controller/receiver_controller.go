// Package controller holds notification-controller's reconcilers: Receiver
// (status.webhookPath and Ready), and Alert and Provider, which have no
// status in Flux's v1beta3 and are only checked, with problems reported as
// Warning events on the object.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/reconciler"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ReceiverReconciler keeps a Receiver's status: webhookPath computed from
// its secret's token, Ready, observedGeneration and lastHandledReconcileAt.
// Flux compatible: Ready=True reason Succeeded with message `Receiver
// initialized for path: <path>`; Ready=False TokenNotFound when the secret
// or its `token` key is missing, retried with the work queue's backoff
// (the error is returned, as Flux does); requeued every spec.interval
// (10m). A change of a token Secret (created, updated, deleted)
// reconciles the Receivers referring to it at once.
type ReceiverReconciler struct {
	client.Client
	// Secrets reads the token Secrets (uncached).
	Secrets       client.Reader
	JitterPercent float64
	// Recorder records the Warning event of a CEL filter that does not compile.
	Recorder record.EventRecorder
	// SecretsNamespace limits the Secret watch to one namespace, as
	// --watch-all-namespaces=false does for the manager; empty: all.
	SecretsNamespace string
}

// SecretRefIndex is the field index of Receivers by spec.secretRef.name.
const SecretRefIndex = ".spec.secretRef.name"

func indexSecretRef(o client.Object) []string {
	r, ok := o.(*notificationv1.Receiver)
	if !ok || r.Spec.SecretRef == nil || r.Spec.SecretRef.Name == "" {
		return nil
	}
	return []string{r.Spec.SecretRef.Name}
}

// SetupWithManager registers the reconciler, the webhookPath index the
// receiver server needs, and a watch of Secrets. The watch has its own
// cache that keeps only each Secret's name, namespace and resourceVersion:
// no data, labels or annotations (a last-applied annotation can hold the
// data) are held in memory.
func (r *ReceiverReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &notificationv1.Receiver{}, server.WebhookPathIndex, server.IndexWebhookPath); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &notificationv1.Receiver{}, SecretRefIndex, indexSecretRef); err != nil {
		return err
	}
	copts := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultTransform: secretIdentity}
	if r.SecretsNamespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{r.SecretsNamespace: {}}
	}
	secrets, err := cache.New(mgr.GetConfig(), copts)
	if err != nil {
		return err
	}
	if err := mgr.Add(secrets); err != nil {
		return err
	}
	secretMeta := &metav1.PartialObjectMetadata{}
	secretMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	// A Secret's change reconciles the Receivers whose spec.secretRef names it.
	receivers := controllerkit.EnqueueListed(r.Client, func() client.ObjectList { return &notificationv1.ReceiverList{} },
		func(s client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(s.GetNamespace()), client.MatchingFields{SecretRefIndex: s.GetName()}}
		})
	return ctrl.NewControllerManagedBy(mgr).
		For(&notificationv1.Receiver{}, builder.WithPredicates(controllerkit.ReconcileOnChange())).
		WatchesRawSource(source.Kind(secrets, client.Object(secretMeta), receivers)).
		WithOptions(opts).
		Complete(r)
}

// secretIdentity keeps only what the Secret watch needs.
func secretIdentity(o any) (any, error) {
	m, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return o, nil
	}
	return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}

// Reconcile computes the receiver's path and status. The skeleton
// (pkg/reconciler) removes the legacy finalizer, records a suspended
// Receiver's observation and writes the status last.
func (r *ReceiverReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	skel := reconciler.Skeleton[*notificationv1.Receiver]{
		Client:     r.Client,
		FieldOwner: ControllerName,
		// Flux's v1 Receiver had a finalizer in older versions; nothing needs it.
		LegacyFinalizers: []string{legacyFinalizer},
		Suspended:        func(obj *notificationv1.Receiver) bool { return obj.Spec.Suspend },
	}
	return skel.Reconcile(ctx, req, &notificationv1.Receiver{}, r.run)
}

// run sets Ready from the observation, at the object's generation. A CEL
// filter that does not compile stalls the Receiver (Flux compatible:
// Ready=False and Stalled=True InvalidCELExpression, a Warning event, no
// retry; status.webhookPath is left as it was).
func (r *ReceiverReconciler) run(ctx context.Context, obj *notificationv1.Receiver, _ *reconciler.StatusPatcher) (ctrl.Result, error) {
	if err := server.ValidateFilters(obj); err != nil {
		msg := "Reconciliation failed terminally due to configuration error: " + err.Error()
		reconciler.SetCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, notificationv1.InvalidCELExpressionReason, msg)
		reconciler.SetCondition(obj, meta.StalledCondition, metav1.ConditionTrue, notificationv1.InvalidCELExpressionReason, msg)
		obj.Status.ObservedGeneration = obj.Generation
		if r.Recorder != nil {
			r.Recorder.Event(obj, corev1.EventTypeWarning, notificationv1.InvalidCELExpressionReason, msg)
		}
		return ctrl.Result{}, nil
	}
	reconciler.RemoveConditions(obj, meta.StalledCondition)
	reason, msg := r.observe(ctx, obj)
	status := metav1.ConditionTrue
	if reason != meta.SucceededReason {
		status = metav1.ConditionFalse
	}
	reconciler.SetCondition(obj, meta.ReadyCondition, status, reason, msg)
	obj.Status.ObservedGeneration = obj.Generation
	if reason == notificationv1.TokenNotFoundReason {
		// Flux returns the error: retried with backoff. msg names the
		// Secret and key, never a value.
		return ctrl.Result{}, errors.New(msg)
	}
	interval := 10 * time.Minute
	if obj.Spec.Interval != nil {
		interval = obj.Spec.Interval.Duration
	}
	return ctrl.Result{RequeueAfter: controllerkit.Jitter(interval, r.JitterPercent)}, nil
}

// observe sets status.webhookPath and returns the Ready reason and message.
func (r *ReceiverReconciler) observe(ctx context.Context, obj *notificationv1.Receiver) (string, string) {
	if !server.SupportedReceiverType(obj.Spec.Type) {
		obj.Status.WebhookPath = ""
		return notificationv1.ValidationFailedReason, fmt.Sprintf("receiver type %s is not supported by Eddy", obj.Spec.Type)
	}
	if obj.Spec.SecretRef == nil {
		obj.Status.WebhookPath = ""
		return notificationv1.TokenNotFoundReason, "spec.secretRef is not set"
	}
	sec := &corev1.Secret{}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	if err := r.Secrets.Get(ctx, key, sec); err != nil {
		obj.Status.WebhookPath = ""
		// Flux compatible wording; the API error names the kind and the name.
		return notificationv1.TokenNotFoundReason, fmt.Sprintf("unable to read token from secret '%s' error: %s", key, err)
	}
	token, ok := sec.Data["token"]
	if !ok || len(token) == 0 {
		obj.Status.WebhookPath = ""
		return notificationv1.TokenNotFoundReason, fmt.Sprintf("invalid '%s' secret data: required field 'token'", key)
	}
	obj.Status.WebhookPath = webhook.Path(string(token), obj.Name, obj.Namespace)
	return meta.SucceededReason, "Receiver initialized for path: " + obj.Status.WebhookPath
}
