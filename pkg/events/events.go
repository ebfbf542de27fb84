// Package events records what controllers do: as Kubernetes Events and, when
// an events address is configured, as Flux event JSON POSTed to the
// notification-controller.
//
// Flux compatible: the JSON shape of fluxcd/pkg/apis/event v1beta1 and the
// sending rules of Flux's runtime recorder (contract §6.1): Warning events have
// severity "error", Normal ones "info", Trace ones go to Kubernetes only;
// metadata keys are sent as given (e.g. `source.toolkit.fluxcd.io/revision`)
// and also become the Kubernetes Event's annotations; object annotations
// prefixed `event.toolkit.fluxcd.io/` are added to the metadata.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
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

// MaxMessageLength is the longest message sent; longer ones are cut. Flux compatible.
const MaxMessageLength = 39000

// Event is the JSON body POSTed to the notification-controller.
type Event struct {
	InvolvedObject      corev1.ObjectReference `json:"involvedObject"`
	Severity            string                 `json:"severity"`
	Timestamp           metav1.Time            `json:"timestamp"`
	Message             string                 `json:"message"`
	Reason              string                 `json:"reason"`
	Metadata            map[string]string      `json:"metadata,omitempty"`
	ReportingController string                 `json:"reportingController"`
	ReportingInstance   string                 `json:"reportingInstance,omitempty"`
}

// Recorder records events for one controller.
type Recorder struct {
	k8s        record.EventRecorder
	scheme     *runtime.Scheme
	webhook    string
	controller string
	instance   string
	client     *http.Client
	log        logr.Logger
}

// NewRecorder returns a recorder that writes Kubernetes Events through k8s
// and, when webhook (--events-addr) is not empty, POSTs each non-trace event
// there. controller names the reporting controller, e.g. "source-controller".
func NewRecorder(k8s record.EventRecorder, scheme *runtime.Scheme, webhook, controller string, log logr.Logger) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{
		k8s: k8s, scheme: scheme, webhook: webhook, controller: controller, instance: host,
		client: &http.Client{Timeout: 5 * time.Second}, log: log,
	}
}

// Event records an event of eventType (corev1.EventTypeNormal,
// corev1.EventTypeWarning or EventTypeTrace) about obj. metadata may be nil.
// Sending to the webhook happens in the background and never blocks a
// reconcile; failures are logged.
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
	if len(message) > MaxMessageLength {
		message = message[:MaxMessageLength]
	}
	k8sType := eventType
	if eventType == EventTypeTrace {
		k8sType = corev1.EventTypeNormal
	}
	r.k8s.AnnotatedEventf(obj, meta, k8sType, reason, "%s", message)
	if r.webhook == "" || eventType == EventTypeTrace {
		return
	}
	ev, err := r.flux(obj, eventType, reason, message, meta)
	if err != nil {
		r.log.Error(err, "cannot build the event", "reason", reason)
		return
	}
	go r.post(ev)
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
	return &Event{
		InvolvedObject: corev1.ObjectReference{
			Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String(),
			Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		Severity:            severity,
		Timestamp:           metav1.Now(),
		Message:             message,
		Reason:              reason,
		Metadata:            meta,
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
	}, nil
}

// post sends the event with up to 4 attempts (1s, 2s, 4s apart); it does not
// retry on 4xx answers: 429 means the receiver already has this event.
func (r *Recorder) post(ev *Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		r.log.Error(err, "cannot encode the event")
		return
	}
	delay := time.Second
	for attempt := 1; ; attempt++ {
		err = r.postOnce(body)
		if err == nil || attempt == 4 || isClientError(err) {
			break
		}
		time.Sleep(delay)
		delay *= 2
	}
	if err != nil {
		r.log.Error(err, "cannot send the event to the notification-controller",
			"reason", ev.Reason, "object", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name)
	}
}

type statusError int

func (s statusError) Error() string {
	return fmt.Sprintf("notification-controller answered %d", int(s))
}

func isClientError(err error) bool {
	s, ok := err.(statusError)
	return ok && s >= 400 && s < 500
}

func (r *Recorder) postOnce(body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.webhook, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return statusError(resp.StatusCode)
	}
	return nil
}
