package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/go-logr/logr"
	lru "github.com/hashicorp/golang-lru/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reasons of the Warning events recorded on Alerts.
const (
	// DispatchFailedReason: a provider did not accept an event.
	DispatchFailedReason = notificationv1.NotificationDispatchFailedReason
	// InvalidConfigReason: the Alert or its Provider cannot be used
	// (bad regexp, missing provider or secret, unsupported type).
	InvalidConfigReason = notificationv1.InvalidConfigReason
)

// DefaultDedupKeys bounds the dedup memory: 2^16 keys.
const DefaultDedupKeys = 1 << 16

// Sizes of the delivery queue: deliveries run on DeliveryWorkers workers
// and at most DeliveryQueueSize wait; past that a delivery is dropped and
// counted in `eddy_event_queue_dropped_total{queue="delivery"}`, so a
// burst of events to a slow or unreachable provider costs neither a
// goroutine per delivery nor unbounded memory. ProviderInFlight and
// ProviderWaiting keep one Provider from filling the queue for the others.
const (
	DeliveryWorkers   = 8
	DeliveryQueueSize = 512
)

// EventServer routes Flux events to the Providers of matching Alerts.
//
// Flux compatible (contract §6.1, §6.2): any path and method; 413 over
// MaxBodyBytes; 400 for a body that is not an event; metadata cleaned to
// `event.toolkit.fluxcd.io/*` and `<group>/*` keys; 429 for a repeat of the
// same (object, message, revision, origin revision, token) within the rate
// limit interval; otherwise 202, with delivery in the background (queued,
// per Provider: see DeliveryWorkers and ProviderInFlight).
type EventServer struct {
	// Client reads Alerts, Providers and involved objects' labels.
	Client client.Client
	// Secrets reads the Providers' Secrets (uncached).
	Secrets client.Reader
	// Recorder records Warning events on Alerts.
	Recorder record.EventRecorder
	// NoCrossNamespaceRefs: an Alert only sees events of its own namespace.
	NoCrossNamespaceRefs bool
	// Retry is the providers' retry policy; zero value: notifier.DefaultRetry.
	Retry *notifier.Retry
	Log   logr.Logger

	dedup      *dedup
	queue      *events.Queue
	deliveries *deliveries

	clientsMu sync.Mutex
	clients   *lru.Cache[types.UID, providerClient]
}

// NewEventServer returns an EventServer that drops repeats within
// rateLimit (0 disables the dedup), with its delivery workers started.
func NewEventServer(c client.Client, secrets client.Reader, rec record.EventRecorder, rateLimit time.Duration, log logr.Logger) *EventServer {
	q := events.NewQueue("delivery", DeliveryWorkers, DeliveryQueueSize)
	return &EventServer{Client: c, Secrets: secrets, Recorder: rec, Log: log, dedup: newDedup(rateLimit, DefaultDedupKeys),
		queue: q, deliveries: newDeliveries(q, log)}
}

// Wait blocks until the deliveries queued so far are done: every event
// answered 202 before the call has reached its providers (or failed).
func (s *EventServer) Wait() { s.queue.Wait() }

// Close stops the delivery workers: deliveries under way are abandoned,
// queued ones dropped. The binary never closes its server; tests do.
func (s *EventServer) Close() { s.queue.Close() }

// ServeHTTP handles one event.
func (s *EventServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, code, err := readEvent(w, r)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	cleanupMetadata(ev)
	if !s.dedup.allow(dedupKey(ev)) {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	delete(ev.Metadata, group(ev)+"/token")

	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	targets, err := s.match(ctx, ev)
	if err != nil {
		s.Log.Error(err, "cannot match the event against Alerts", "object", objRef(ev))
		http.Error(w, "cannot list Alerts", http.StatusInternalServerError)
		return
	}
	for _, t := range targets {
		// Dropped deliveries are counted and logged by add; the answer stays 202.
		s.deliveries.add(t.provider.Namespace+"/"+t.provider.Name, func(ctx context.Context) { s.dispatch(ctx, t) })
	}
	w.WriteHeader(http.StatusAccepted)
}

// readEvent decodes and checks the body; on error it returns the HTTP code.
func readEvent(w http.ResponseWriter, r *http.Request) (*events.Event, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the event is larger than %d bytes", MaxBodyBytes)
		}
		return nil, http.StatusBadRequest, errors.New("cannot read the body")
	}
	ev := &events.Event{}
	if err := json.Unmarshal(body, ev); err != nil {
		return nil, http.StatusBadRequest, errors.New("the body is not a Flux event")
	}
	o := ev.InvolvedObject
	if o.Kind == "" || o.Name == "" || o.Namespace == "" {
		return nil, http.StatusBadRequest, errors.New("involvedObject needs kind, name and namespace")
	}
	return ev, 0, nil
}

// group is the API group of the involved object, e.g. kustomize.toolkit.fluxcd.io.
func group(ev *events.Event) string {
	g, _, ok := strings.Cut(ev.InvolvedObject.APIVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// cleanupMetadata keeps `event.toolkit.fluxcd.io/*` and `<group>/*` keys,
// without `<group>/checksum` and `<group>/digest`. Flux compatible.
func cleanupMetadata(ev *events.Event) {
	g := group(ev) + "/"
	out := map[string]string{}
	for k, v := range ev.Metadata {
		switch {
		case strings.HasPrefix(k, events.MetadataPrefix):
		case g != "/" && strings.HasPrefix(k, g) && k != g+"checksum" && k != g+"digest":
		default:
			continue
		}
		out[k] = v
	}
	ev.Metadata = out
}

// dedupKey hashes what makes an event the same one. Flux compatible.
func dedupKey(ev *events.Event) [32]byte {
	g := group(ev)
	parts := []string{ev.InvolvedObject.Name, ev.InvolvedObject.Namespace, ev.InvolvedObject.Kind, ev.Message}
	for _, k := range []string{"originRevision", "revision", "token"} {
		if v, ok := ev.Metadata[g+"/"+k]; ok {
			parts = append(parts, v)
		}
	}
	// A separator that cannot occur in names keeps ("ab","c") ≠ ("a","bc").
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

func objRef(ev *events.Event) string {
	o := ev.InvolvedObject
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// target is one delivery: an event as presented to one Alert's provider.
type target struct {
	alert    *notificationv1.Alert
	provider *notificationv1.Provider
	event    *events.Event
}

// match lists all Alerts and returns the deliveries ev causes.
func (s *EventServer) match(ctx context.Context, ev *events.Event) ([]target, error) {
	var alerts notificationv1.AlertList
	if err := s.Client.List(ctx, &alerts); err != nil {
		return nil, err
	}
	var out []target
	for i := range alerts.Items {
		a := &alerts.Items[i]
		if a.Spec.Suspend || (s.NoCrossNamespaceRefs && a.Namespace != ev.InvolvedObject.Namespace) {
			continue
		}
		if a.Spec.EventSeverity == notificationv1.SeverityError && ev.Severity != events.SeverityError {
			continue
		}
		if !s.sourceMatches(ctx, a, ev) {
			continue
		}
		ok, invalid := messageMatches(a, ev.Message)
		for _, msg := range invalid {
			s.warn(a, InvalidConfigReason, msg)
		}
		if !ok {
			continue
		}
		p := &notificationv1.Provider{}
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.ProviderRef.Name}, p); err != nil {
			if apierrors.IsNotFound(err) {
				// Logged, not a Warning on the Alert: a Provider applied a
				// moment after its Alert is a wait (the Alert reconciler
				// reports it as one). Flux compatible (event handler).
				s.Log.Error(err, "cannot read the provider", "alert", a.Namespace+"/"+a.Name, "object", objRef(ev))
				continue
			}
			return nil, err
		}
		if p.Spec.Suspend || !routes(p.Spec.Type, ev) {
			continue
		}
		shown, conflicts := presented(ev, a)
		if len(conflicts) > 0 {
			s.warnConflicts(a, ev, conflicts)
		}
		out = append(out, target{alert: a, provider: p, event: shown})
	}
	return out, nil
}

// sourceMatches reports whether one of a's eventSources selects ev's
// object: same kind, same namespace (default the Alert's), same name or
// `*`, and, when matchLabels is set (with a name or `*`), the object's
// labels. Flux compatible (eventMatchesAlertSource).
func (s *EventServer) sourceMatches(ctx context.Context, a *notificationv1.Alert, ev *events.Event) bool {
	o := ev.InvolvedObject
	for _, src := range a.Spec.EventSources {
		ns := src.Namespace
		if ns == "" {
			ns = a.Namespace
		}
		if src.Kind != o.Kind || ns != o.Namespace {
			continue
		}
		if src.Name != "*" && src.Name != o.Name {
			continue
		}
		if len(src.MatchLabels) == 0 {
			return true
		}
		if s.labelsMatch(ctx, o, src.MatchLabels) {
			return true
		}
	}
	return false
}

func (s *EventServer) labelsMatch(ctx context.Context, o corev1.ObjectReference, want map[string]string) bool {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil || o.APIVersion == "" {
		return false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(o.Kind))
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, obj); err != nil {
		s.Log.V(1).Info("cannot read the involved object's labels", "object", o.Kind+"/"+o.Namespace+"/"+o.Name, "error", err.Error())
		return false
	}
	return labels.SelectorFromSet(want).Matches(labels.Set(obj.GetLabels()))
}

// messageMatches applies inclusionList (if set, one regexp must match)
// then exclusionList (any match drops). Flux compatible
// (messageIsIncluded, messageIsExcluded): an invalid regexp is skipped and
// the others still apply; invalid lists one message per such regexp.
func messageMatches(a *notificationv1.Alert, msg string) (ok bool, invalid []string) {
	match := func(list, expr string) bool {
		re, err := regexp.Compile(expr)
		if err != nil {
			invalid = append(invalid, fmt.Sprintf("%s: invalid regexp %q: %v", list, expr, err))
			return false
		}
		return re.MatchString(msg)
	}
	included := len(a.Spec.InclusionList) == 0
	for _, expr := range a.Spec.InclusionList {
		if match("inclusionList", expr) {
			included = true
			break
		}
	}
	if !included {
		return false, invalid
	}
	for _, expr := range a.Spec.ExclusionList {
		if match("exclusionList", expr) {
			return false, invalid
		}
	}
	return true, invalid
}

// routes applies Flux's commit-status routing: commit-status updates (e.g.
// "Reconciliation finished") go only to git and generic providers; git
// providers get only those, events with an explicit commit, and errors;
// pull-request comment providers only events with a change request.
func routes(providerType string, ev *events.Event) bool {
	update := ev.Metadata[group(ev)+"/commit_status"] == "update"
	if notifier.IsGit(providerType) {
		_, commit := ev.Metadata[notifier.CommitMetadataKey]
		return update || commit || ev.Severity == events.SeverityError
	}
	if notifier.IsChangeRequest(providerType) {
		if _, ok := ev.Metadata[notifier.ChangeRequestMetadataKey]; !ok {
			return false
		}
	}
	return !update || notifier.IsGeneric(providerType)
}

// Sources of the metadata keys a provider sees, as named in the Warning
// event of a conflict. Flux compatible.
const (
	sourceObjectAnnotations = "involved object annotations"
	sourceAlertMetadata     = "Alert object .spec.eventMetadata"
	sourceControllerKeys    = "involved object controller metadata"
)

// MetadataConflictMessage is the message of the Warning event
// (MetadataAppendFailed) on an Alert whose metadata sources set the same key
// for an event. Flux compatible.
const MetadataConflictMessage = "metadata key conflicts detected (please refer to the Alert API docs and Flux RFC 0008 for more information)"

// presented is ev as a provider sees it: metadata keys without their
// prefixes, by precedence (low to high) `event.toolkit.fluxcd.io/*` (the
// involved object's annotations), the Alert's eventMetadata, `<group>/*`
// (the emitting controller's). conflicts maps each key set by more than one
// source to those sources, lowest first ("involved object annotations,
// Alert object .spec.eventMetadata"). Flux compatible (RFC-0008; Alert API
// v1 EventMetadata).
func presented(ev *events.Event, a *notificationv1.Alert) (out *events.Event, conflicts map[string]string) {
	cp := *ev
	g := group(ev) + "/"
	md := map[string]string{}
	sources := map[string][]string{}
	set := func(k, v, source string) {
		md[k] = v
		sources[k] = append(sources[k], source)
	}
	for k, v := range ev.Metadata {
		if strings.HasPrefix(k, events.MetadataPrefix) {
			set(strings.TrimPrefix(k, events.MetadataPrefix), v, sourceObjectAnnotations)
		}
	}
	for k, v := range a.Spec.EventMetadata {
		set(k, v, sourceAlertMetadata)
	}
	for k, v := range ev.Metadata {
		if g != "/" && strings.HasPrefix(k, g) {
			set(strings.TrimPrefix(k, g), v, sourceControllerKeys)
		}
	}
	for k, src := range sources {
		if len(src) > 1 {
			if conflicts == nil {
				conflicts = map[string]string{}
			}
			conflicts[k] = strings.Join(src, ", ")
		}
	}
	if len(md) == 0 {
		md = nil
	}
	cp.Metadata = md
	return &cp, conflicts
}

// warnConflicts logs the metadata key conflicts of an event for Alert a at
// info level and records them as a Warning event MetadataAppendFailed on a,
// the keys and their sources as the event's annotations. Flux compatible.
func (s *EventServer) warnConflicts(a *notificationv1.Alert, ev *events.Event, conflicts map[string]string) {
	keys := make([]string, 0, len(conflicts))
	for k := range conflicts {
		keys = append(keys, k+": "+conflicts[k])
	}
	sort.Strings(keys)
	s.Log.Info("warning: "+MetadataConflictMessage, "alert", a.Namespace+"/"+a.Name, "object", objRef(ev), "conflictingKeys", keys)
	if s.Recorder != nil {
		s.Recorder.AnnotatedEventf(a, conflicts, corev1.EventTypeWarning, notificationv1.MetadataAppendFailedReason, "%s", MetadataConflictMessage)
	}
}

// dispatch delivers one event within the provider's timeout (default 15s)
// and records a failure as a Warning event on the Alert.
func (s *EventServer) dispatch(ctx context.Context, t target) {
	timeout := time.Duration(notificationv1.DefaultProviderTimeoutSeconds) * time.Second
	if t.provider.Spec.Timeout != nil {
		timeout = t.provider.Spec.Timeout.Duration
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	log := s.Log.WithValues("alert", t.alert.Namespace+"/"+t.alert.Name, "provider", t.provider.Name, "object", objRef(t.event))
	n, err := s.notifier(ctx, t.provider)
	if err != nil {
		log.Error(err, "cannot use the provider")
		s.warn(t.alert, InvalidConfigReason, err.Error())
		return
	}
	ctx = notifier.WithAlert(ctx, notifier.AlertRef{Namespace: t.alert.Namespace, Name: t.alert.Name, UID: string(t.alert.UID)})
	id, err := commitStatus(ctx, t.event, t.alert, t.provider)
	if err != nil {
		log.Error(err, "cannot compute the commit status")
		s.warn(t.alert, DispatchFailedReason, fmt.Sprintf("failed to dispatch notification for %s: failed to create commit status: "+
			"failed to evaluate the spec.commitStatusExpr CEL expression for the event: %v", objRef(t.event), err))
		return
	}
	if id != "" {
		ctx = notifier.WithCommitStatus(ctx, id)
	}
	if err := n.Post(ctx, t.event); err != nil {
		log.Error(err, "cannot send the notification")
		s.warn(t.alert, DispatchFailedReason, fmt.Sprintf("failed to send notification for %s: %v", objRef(t.event), err))
		return
	}
	log.V(1).Info("notification sent")
}

func (s *EventServer) warn(a *notificationv1.Alert, reason, msg string) {
	if s.Recorder != nil {
		s.Recorder.Event(a, corev1.EventTypeWarning, reason, msg)
	}
}
