// Package events records what controllers do: as Kubernetes Events and, when
// an events address is configured, as Flux event JSON POSTed to the
// notification-controller.
//
// Flux compatible: the JSON shape of fluxcd/pkg/apis/event v1 (Flux v2.10:
// v1beta1's plus the required `action` and the optional `relatedObject`) and
// the sending rules of Flux's runtime recorder (contract §6.1): Warning events have
// severity "error", Normal ones "info", Trace ones go to Kubernetes only;
// metadata keys are sent as given (e.g. `source.toolkit.fluxcd.io/revision`)
// and also become the Kubernetes Event's annotations; object annotations
// prefixed `event.toolkit.fluxcd.io/` are added to the metadata.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/httpretry"
	"github.com/eddyops/eddy/pkg/redact"
	"github.com/go-logr/logr"
	"github.com/hashicorp/go-retryablehttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Event types. Trace events are recorded in Kubernetes only.
const (
	EventTypeTrace = "Trace"
)

// Severities of the Flux event JSON.
const (
	SeverityInfo  = "info"
	SeverityError = "error"
)

// MetadataPrefix marks object annotations copied into every event's metadata.
const MetadataPrefix = "event.toolkit.fluxcd.io/"

// MaxMessageLength is the longest message sent, in characters; longer ones
// are cut. Flux compatible: the maxLength of the event API's message.
const MaxMessageLength = 39000

// Event is the JSON body POSTed to the notification-controller: Flux's
// event.toolkit.fluxcd.io/v1 Event. A v1beta1 body is the same without
// Action and RelatedObject, so it decodes into this type too (Action "").
type Event struct {
	InvolvedObject corev1.ObjectReference `json:"involvedObject"`
	// RelatedObject is a second object the event is about, e.g. the source
	// of a Kustomization; optional.
	RelatedObject *corev1.ObjectReference `json:"relatedObject,omitempty"`
	Severity      string                  `json:"severity"`
	Timestamp     metav1.Time             `json:"timestamp"`
	Message       string                  `json:"message"`
	Reason        string                  `json:"reason"`
	// Action is the stage of the reconcile the event reports, one of the
	// emitting API group's Action values (e.g. source Reconcile, kustomize
	// Apply). Required in v1 (always sent); empty in a v1beta1 body.
	Action              string            `json:"action"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	ReportingController string            `json:"reportingController"`
	ReportingInstance   string            `json:"reportingInstance,omitempty"`
}

// Actions gives each event of a controller its action: the one its reason
// maps to in ByReason, else Default. A call site whose action is not its
// reason's (the same reason reported by two stages) sets it with
// Recorder.WithAction.
type Actions struct {
	Default  string
	ByReason map[string]string
}

// ActionTable builds Actions from an API group's typed Action constants,
// e.g. ActionTable(sourcev1.ActionReconcile, map[string]sourcev1.Action{…}).
func ActionTable[A ~string](def A, byReason map[string]A) Actions {
	t := Actions{Default: string(def), ByReason: make(map[string]string, len(byReason))}
	for reason, a := range byReason {
		t.ByReason[reason] = string(a)
	}
	return t
}

// action is the action of an event with reason, by the table.
func (a Actions) action(reason string) string {
	if v, ok := a.ByReason[reason]; ok {
		return v
	}
	return a.Default
}

// Sizes of a Recorder's delivery queue: a few workers suffice for the
// events of one controller, and a full queue drops (counted in
// `eddy_event_queue_dropped_total{queue="recorder"}`) rather than holding a
// reconcile or growing without bound while the notification-controller is
// unreachable.
const (
	RecorderWorkers   = 4
	RecorderQueueSize = 256
)

// Recorder records events for one controller. The With* methods return a
// copy sharing the delivery queue: a controller sets its action table once
// (WithActions) and a call site narrows one event (WithAction, WithRelated).
type Recorder struct {
	k8s        record.EventRecorder
	scheme     *runtime.Scheme
	webhook    string
	controller string
	instance   string
	client     *retryablehttp.Client
	queue      *Queue
	log        logr.Logger

	actions Actions
	action  string            // overrides actions when not empty
	related client.Object     // the relatedObject, when not nil
	k8sOnly map[string]string // annotations of the Kubernetes Event only
}

// WithActions returns a recorder whose events get their action from t.
func (r *Recorder) WithActions(t Actions) *Recorder {
	c := *r
	c.actions = t
	return &c
}

// WithAction returns a recorder whose events all have action, whatever
// their reason, e.g. r.WithAction(kustomizev1.ActionPrune.String()).Event(…).
func (r *Recorder) WithAction(action string) *Recorder {
	c := *r
	c.action = action
	return &c
}

// WithRelated returns a recorder whose events name obj as their
// relatedObject (e.g. a Kustomization's source); nil sends none.
func (r *Recorder) WithRelated(obj client.Object) *Recorder {
	c := *r
	c.related = obj
	return &c
}

// WithAnnotations returns a recorder whose events carry annotations on the
// Kubernetes Event only: they are not sent to the notification-controller,
// so alerts and webhook payloads do not change. Used for data a reader of
// the Events needs structured, e.g. ssa.DriftAnnotation; nil adds none.
func (r *Recorder) WithAnnotations(annotations map[string]string) *Recorder {
	c := *r
	c.k8sOnly = annotations
	return &c
}

// actionFor is the action of an event with reason.
func (r *Recorder) actionFor(reason string) string {
	if r.action != "" {
		return r.action
	}
	return r.actions.action(reason)
}

// NewRecorder returns a recorder that writes Kubernetes Events through k8s
// and, when webhook (--events-addr) is not empty, POSTs each non-trace event
// there from a queue of RecorderWorkers workers. controller names the
// reporting controller, e.g. "source-controller".
func NewRecorder(k8s record.EventRecorder, scheme *runtime.Scheme, webhook, controller string, log logr.Logger) *Recorder {
	return newRecorder(k8s, scheme, webhook, controller, log, RecorderWorkers, RecorderQueueSize)
}

func newRecorder(k8s record.EventRecorder, scheme *runtime.Scheme, webhook, controller string, log logr.Logger, workers, size int) *Recorder {
	host, _ := os.Hostname()
	r := &Recorder{k8s: k8s, scheme: scheme, webhook: webhook, controller: controller, instance: host, log: log}
	if webhook != "" {
		// 4 attempts, 1s, 2s, 4s apart, 5s each.
		r.client = httpretry.New(&http.Client{Timeout: 5 * time.Second}, 3, time.Second, 4*time.Second, httpretry.RetryErrorsAnd5xx)
		r.queue = NewQueue("recorder", workers, size)
	}
	return r
}

// Close stops posting: events being sent are abandoned, queued ones
// dropped. The controllers never close their recorder; tests do.
func (r *Recorder) Close() {
	if r.queue != nil {
		r.queue.Close()
	}
}

// Event records an event of eventType (corev1.EventTypeNormal,
// corev1.EventTypeWarning or EventTypeTrace) about obj. metadata may be nil.
// A message longer than MaxMessageLength characters is cut there. Posting
// to the webhook is queued and never blocks a reconcile: when the queue is
// full the event is dropped (and counted); failures are logged.
func (r *Recorder) Event(obj client.Object, eventType, reason, message string, metadata map[string]string) {
	meta := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if strings.HasPrefix(k, MetadataPrefix) {
			meta[k] = v
		}
	}
	for k, v := range metadata {
		meta[k] = v
	}
	message = Truncate(message, MaxMessageLength)
	k8sType := eventType
	if eventType == EventTypeTrace {
		k8sType = corev1.EventTypeNormal
	}
	r.k8s.AnnotatedEventf(obj, r.k8sAnnotations(meta), k8sType, reason, "%s", message)
	if r.webhook == "" || eventType == EventTypeTrace {
		return
	}
	ev, err := r.flux(obj, eventType, reason, message, meta)
	if err != nil {
		r.log.Error(err, "cannot build the event", "reason", reason)
		return
	}
	if !r.queue.Add(func(ctx context.Context) { r.post(ctx, ev) }) {
		r.log.V(1).Info("event dropped: the queue to the notification-controller is full", "reason", reason, "object", eventObject(ev))
	}
}

// k8sAnnotations are the annotations of the Kubernetes Event: meta and
// those of WithAnnotations, which win.
func (r *Recorder) k8sAnnotations(meta map[string]string) map[string]string {
	if len(r.k8sOnly) == 0 {
		return meta
	}
	out := make(map[string]string, len(meta)+len(r.k8sOnly))
	for k, v := range meta {
		out[k] = v
	}
	for k, v := range r.k8sOnly {
		out[k] = v
	}
	return out
}

// Truncate returns s cut to at most n characters (runes), never inside a
// UTF-8 sequence. Flux's event API limits the message with an OpenAPI
// maxLength, which counts characters.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func eventObject(ev *Event) string {
	return ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
}

func (r *Recorder) flux(obj client.Object, eventType, reason, message string, meta map[string]string) (*Event, error) {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil, err
	}
	severity := SeverityInfo
	if eventType == corev1.EventTypeWarning {
		severity = SeverityError
	}
	if len(meta) == 0 {
		meta = nil
	}
	var related *corev1.ObjectReference
	if r.related != nil {
		if rgvk, err := apiutil.GVKForObject(r.related, r.scheme); err == nil {
			related = &corev1.ObjectReference{
				Kind: rgvk.Kind, APIVersion: rgvk.GroupVersion().String(),
				Namespace: r.related.GetNamespace(), Name: r.related.GetName(),
				UID: r.related.GetUID(), ResourceVersion: r.related.GetResourceVersion(),
			}
		}
	}
	return &Event{
		InvolvedObject: corev1.ObjectReference{
			Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(),
			Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		RelatedObject:       related,
		Severity:            severity,
		Timestamp:           metav1.Now(),
		Message:             message,
		Reason:              reason,
		Action:              r.actionFor(reason),
		Metadata:            meta,
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
	}, nil
}

// post sends the event with up to 4 attempts (1s, 2s, 4s apart) after
// connection errors and 5xx answers; 4xx answers are final: 429 means the
// receiver already has this event. Flux compatible.
func (r *Recorder) post(ctx context.Context, ev *Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		r.log.Error(err, "cannot encode the event")
		return
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, r.webhook, body)
	if err != nil {
		r.log.Error(redact.URLError(err), "cannot send the event to the notification-controller")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // drained: the connection is reused
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			// Not a failure: the receiver has this event already.
			r.log.V(1).Info("the notification-controller already has the event (429)", "reason", ev.Reason, "object", eventObject(ev))
			return
		}
		if resp.StatusCode >= 300 {
			err = fmt.Errorf("notification-controller answered %d", resp.StatusCode)
		}
	}
	if err != nil {
		r.log.Error(redact.URLError(err), "cannot send the event to the notification-controller",
			"reason", ev.Reason, "object", eventObject(ev))
	}
}
