package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WebhookPathIndex is the field index of Receivers by status.webhookPath;
// the manager's cache must have it (see IndexWebhookPath).
const WebhookPathIndex = ".status.webhookPath"

// IndexWebhookPath is the index function of WebhookPathIndex.
func IndexWebhookPath(o client.Object) []string {
	r, ok := o.(*notificationv1.Receiver)
	if !ok || r.Status.WebhookPath == "" {
		return nil
	}
	return []string{r.Status.WebhookPath}
}

// ReceiverServer serves /hook/<digest>. Flux compatible answers (contract
// §6.4): 404 unknown path, 503 suspended or not Ready, 413 body over
// MaxBodyBytes, 400 failed verification or an event type not allowed, 500
// when the CEL filters cannot read the body or any resource could not be
// annotated or filtered (the others still are; the answer names the
// failed ones), else 200. Each resource the filters accept gets
// `reconcile.fluxcd.io/requestedAt` merge-patched. A Receiver is found by
// status.webhookPath alone, as in Flux.
type ReceiverServer struct {
	// Client reads Receivers (through the WebhookPathIndex) and patches resources.
	Client client.Client
	// Secrets reads the Receivers' token Secrets (uncached).
	Secrets client.Reader
	// NoCrossNamespaceRefs refuses resources outside the Receiver's namespace.
	NoCrossNamespaceRefs bool
	Log                  logr.Logger
}

// errVerify is a request that fails verification: answered 400.
type errVerify struct{ msg string }

func (e errVerify) Error() string { return e.msg }

// ServeHTTP handles one webhook.
func (s *ReceiverServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, notificationv1.ReceiverWebhookPath) {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var list notificationv1.ReceiverList
	if err := s.Client.List(ctx, &list, client.MatchingFields{WebhookPathIndex: r.URL.Path}); err != nil {
		s.Log.Error(err, "cannot list Receivers")
		http.Error(w, "cannot list receivers", http.StatusInternalServerError)
		return
	}
	if len(list.Items) == 0 {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	for i := range list.Items {
		rcv := &list.Items[i]
		log := s.Log.WithValues("receiver", rcv.Namespace+"/"+rcv.Name)
		code, msg := s.handle(ctx, rcv, r, body)
		if code != http.StatusOK {
			log.Info("webhook refused", "code", code, "reason", msg)
			http.Error(w, msg, code)
			return
		}
		log.Info("webhook handled", "result", msg)
	}
	w.WriteHeader(http.StatusOK)
}

// handle verifies the request for rcv and requests the reconciles; it
// returns the HTTP code and a message safe to log and answer.
func (s *ReceiverServer) handle(ctx context.Context, rcv *notificationv1.Receiver, r *http.Request, body []byte) (int, string) {
	if rcv.Spec.Suspend {
		return http.StatusServiceUnavailable, "the receiver is suspended"
	}
	if c := apimeta.FindStatusCondition(rcv.Status.Conditions, meta.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
		return http.StatusServiceUnavailable, "the receiver is not ready"
	}
	if rcv.Spec.SecretRef == nil {
		return http.StatusServiceUnavailable, "the receiver has no secretRef"
	}
	sec := &corev1.Secret{}
	if err := s.Secrets.Get(ctx, client.ObjectKey{Namespace: rcv.Namespace, Name: rcv.Spec.SecretRef.Name}, sec); err != nil {
		return http.StatusInternalServerError, "cannot read the receiver's secret: " + err.Error()
	}
	// The path was matched against status.webhookPath (Flux compatible):
	// after a token rotation the old path works until the reconciler
	// writes the new one, so no moment leaves the Receiver without a path.
	payload, err := Verify(ctx, rcv.Spec.Type, rcv.Spec.Events, sec.Data, r.Header, body)
	if err != nil {
		var ve errVerify
		if errors.As(err, &ve) {
			return http.StatusBadRequest, ve.msg
		}
		return http.StatusServiceUnavailable, err.Error()
	}
	filters, err := newFilters(rcv, r.Header, payload)
	if err != nil {
		return http.StatusInternalServerError, "unable to create resource filters: " + err.Error()
	}
	n, skipped, failed := s.requestReconciles(ctx, rcv, filters)
	if len(failed) > 0 {
		return http.StatusInternalServerError, fmt.Sprintf("reconcile requested for %d resources; failed for %d: %s",
			n, len(failed), strings.Join(failed, "; "))
	}
	if skipped > 0 {
		return http.StatusOK, fmt.Sprintf("reconcile requested for %d resources; %d skipped by the CEL filters", n, skipped)
	}
	return http.StatusOK, fmt.Sprintf("reconcile requested for %d resources", n)
}

// sourceAPIVersions are the kinds whose apiVersion may be left out.
// Flux compatible: Kustomization and HelmRelease need an explicit one.
var sourceAPIVersions = map[string]string{
	"Bucket": "source.toolkit.fluxcd.io/v1", "GitRepository": "source.toolkit.fluxcd.io/v1",
	"HelmChart": "source.toolkit.fluxcd.io/v1", "HelmRepository": "source.toolkit.fluxcd.io/v1",
	"OCIRepository": "source.toolkit.fluxcd.io/v1", "ImageRepository": "image.toolkit.fluxcd.io/v1",
	"ArtifactGenerator": "source.extensions.fluxcd.io/v1beta1",
}

// requestReconciles merge-patches `reconcile.fluxcd.io/requestedAt` on
// every resource of rcv that its filter (filters[i] for resources[i], nil:
// none) accepts. Flux compatible: a failing entry (not found, forbidden,
// cross-namespace refused, no apiVersion, a filter that fails to
// evaluate) does not stop the others. It returns how many objects it
// patched, how many the filters skipped, and one line per failure,
// `<kind>/<namespace>/<name>: <reason>`, free of secrets.
func (s *ReceiverServer) requestReconciles(ctx context.Context, rcv *notificationv1.Receiver, filters []resourceFilter) (n, skipped int, failed []string) {
	now := metav1.Now().String()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, now)
	for i, res := range rcv.Spec.Resources {
		ref := res.CrossNamespaceObjectReference
		ns := ref.Namespace
		if ns == "" {
			ns = rcv.Namespace
		}
		fail := func(name, reason string) {
			failed = append(failed, fmt.Sprintf("%s/%s/%s: %s", ref.Kind, ns, name, reason))
		}
		targets, err := s.targets(ctx, ref, rcv.Namespace, ns, filters[i] != nil)
		if err != nil {
			fail(ref.Name, err.Error())
			continue
		}
		for _, obj := range targets {
			if filters[i] != nil {
				ok, err := filters[i](ctx, obj)
				if err != nil {
					fail(obj.GetName(), err.Error())
					continue
				}
				if !ok {
					skipped++
					continue
				}
			}
			if err := s.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				fail(obj.GetName(), err.Error())
				continue
			}
			n++
		}
	}
	return n, skipped, failed
}

// targets returns the objects ref names in namespace ns: the one named,
// read first when a filter needs its metadata, or those of `*` with
// matchLabels.
func (s *ReceiverServer) targets(ctx context.Context, ref notificationv1.CrossNamespaceObjectReference, home, ns string, read bool) ([]*metav1.PartialObjectMetadata, error) {
	if s.NoCrossNamespaceRefs && ns != home {
		return nil, errors.New("cross-namespace references are not allowed")
	}
	apiVersion := ref.APIVersion
	if apiVersion == "" {
		apiVersion = sourceAPIVersions[ref.Kind]
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || apiVersion == "" {
		return nil, errors.New("apiVersion is required for this kind")
	}
	if ref.Name != "*" {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
		obj.SetNamespace(ns)
		obj.SetName(ref.Name)
		if read {
			if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return nil, err
			}
			obj.SetGroupVersionKind(gv.WithKind(ref.Kind)) // `res.kind` and `res.apiVersion`
		}
		return []*metav1.PartialObjectMetadata{obj}, nil
	}
	if len(ref.MatchLabels) == 0 {
		return nil, errors.New("name '*' requires matchLabels")
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gv.WithKind(ref.Kind + "List"))
	if err := s.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(ref.MatchLabels)); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	out := make([]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
		out[i].SetGroupVersionKind(gv.WithKind(ref.Kind))
	}
	return out, nil
}
