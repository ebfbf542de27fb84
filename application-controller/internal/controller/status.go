package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/appdiff"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event reasons on Applications, Argo CD's (argocd-contract §2).
const (
	ReasonResourceUpdated    = "ResourceUpdated"
	ReasonOperationStarted   = "OperationStarted"
	ReasonOperationCompleted = "OperationCompleted"
)

// comparisonConditions are the condition types a comparison owns: set
// when it finds them, cleared when it does not.
var comparisonConditions = []string{
	argov1.ConditionInvalidSpecError, argov1.ConditionComparisonError,
	argov1.ConditionRepeatedResourceWarning, argov1.ConditionSharedResourceWarning,
}

// setComparison writes c into app's status (a pending source changes
// nothing) and the pending diff annotation, and records the sync and
// health transitions as events.
func (r *ApplicationReconciler) setComparison(app *argov1.Application, c *comparison) {
	if c.pending {
		return
	}
	now := metav1.NewTime(r.clock())
	st := &app.Status
	oldSync, oldHealth := st.Sync.Status, st.Health.Status
	found := map[string]string{}
	if c.err != nil {
		found[c.errType] = c.err.Error()
		st.Sync.Status = argov1.SyncStatusUnknown
		if st.Health.Status == "" {
			st.Health.Status = argov1.HealthUnknown
		}
	}
	if c.target != nil && c.err == nil {
		st.Sync = argov1.SyncStatus{Status: c.sync, ComparedTo: comparedTo(app)}
		if app.IsMultiSource() {
			st.Sync.Revisions = c.target.revisions
			st.SourceTypes = c.target.sourceTypes
		} else if len(c.target.revisions) > 0 {
			st.Sync.Revision = c.target.revisions[0]
			if len(c.target.sourceTypes) > 0 {
				st.SourceType = c.target.sourceTypes[0]
			}
		}
		if st.Health.Status != c.health.Status {
			c.health.LastTransitionTime = &now
		} else {
			c.health.LastTransitionTime = st.Health.LastTransitionTime
		}
		st.Health = c.health
		st.Resources = c.resources
		st.Summary = c.summary
		if len(c.target.repeated) > 0 {
			first := c.target.repeated[0]
			found[argov1.ConditionRepeatedResourceWarning] = fmt.Sprintf("Resource %s appeared %d times among application resources.",
				first, 1+countOf(c.target.repeated, first))
		}
		if len(c.shared) > 0 {
			found[argov1.ConditionSharedResourceWarning] = c.shared[0]
		}
	}
	setPendingDiff(app, pendingDiff(c))
	st.ReconciledAt = &now
	st.ControllerNamespace = r.Namespace
	setConditions(st, comparisonConditions, found, now)
	delete(app.Annotations, argov1.AnnotationRefresh)
	delete(app.Annotations, "argocd.argoproj.io/refresh-timestamp")
	if oldSync != st.Sync.Status && oldSync != "" {
		r.event(app, corev1.EventTypeNormal, ReasonResourceUpdated, fmt.Sprintf("Updated sync status: %s -> %s", oldSync, st.Sync.Status))
	}
	if oldHealth != st.Health.Status && oldHealth != "" {
		r.event(app, corev1.EventTypeNormal, ReasonResourceUpdated, fmt.Sprintf("Updated health status: %s -> %s", oldHealth, st.Health.Status))
	}
}

func comparedTo(app *argov1.Application) argov1.ComparedTo {
	ct := argov1.ComparedTo{Destination: app.Spec.Destination, IgnoreDifferences: app.Spec.IgnoreDifferences}
	if app.IsMultiSource() {
		ct.Sources = app.Spec.Sources
	} else if app.Spec.Source != nil {
		ct.Source = *app.Spec.Source
	}
	return ct
}

// setConditions replaces the conditions of the types owned by the caller
// with found (type → message), keeping a condition's time while its
// message stays, and the other types as they are. Sorted by type.
func setConditions(st *argov1.ApplicationStatus, owned []string, found map[string]string, now metav1.Time) {
	isOwned := map[string]bool{}
	for _, t := range owned {
		isOwned[t] = true
	}
	var out []argov1.ApplicationCondition
	for _, c := range st.Conditions {
		if !isOwned[c.Type] {
			out = append(out, c)
			continue
		}
		if msg, ok := found[c.Type]; ok && msg == c.Message {
			out = append(out, c)
			delete(found, c.Type)
		}
	}
	for t, msg := range found {
		out = append(out, argov1.ApplicationCondition{Type: t, Message: msg, LastTransitionTime: &now})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	st.Conditions = out
}

// patch writes app's changes since orig in one merge patch on the object
// (no status subresource), guarded by orig's resourceVersion so an
// operation requested meanwhile is never overwritten. A conflict with a
// write that changed only metadata (an app of apps' parent re-applying
// it, a notifier's or kubectl's annotations) does not lose the pass's
// record: the same changes are written onto the newer object, as Argo CD
// retries its operation state writes. A pass may have acted on the
// cluster (a hook deleted) on the strength of what it writes.
func (r *ApplicationReconciler) patch(ctx context.Context, orig, app *argov1.Application) error {
	if equality.Semantic.DeepEqual(orig, app) {
		return nil
	}
	data, err := client.MergeFrom(orig).Data(app)
	if err != nil {
		return err
	}
	err = r.Client.Patch(ctx, app, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	superseded := []string{orig.ResourceVersion}
	var reader client.Reader = r.Client // cached: the routed client reads the Application there
	if r.local() {
		reader = r.APIReader
	}
	for try := 0; apierrors.IsConflict(err) && try < 20; try++ {
		fresh := &argov1.Application{}
		if gerr := reader.Get(ctx, client.ObjectKeyFromObject(orig), fresh); gerr != nil || !onlyMetadataChanged(orig, fresh) {
			return err
		}
		if fresh.ResourceVersion == orig.ResourceVersion { // a cache that has not seen the other write yet
			time.Sleep(50 * time.Millisecond)
			continue
		}
		superseded = append(superseded, fresh.ResourceVersion)
		locked, merr := withResourceVersion(data, fresh.ResourceVersion)
		if merr != nil {
			return err
		}
		err = r.Client.Patch(ctx, app, client.RawPatch(types.MergePatchType, locked))
	}
	if err == nil {
		r.stale.superseded(client.ObjectKeyFromObject(orig), superseded...)
	}
	return err
}

// onlyMetadataChanged: fresh differs from orig in nothing a reconcile
// reads or writes but metadata (its labels and annotations).
func onlyMetadataChanged(orig, fresh *argov1.Application) bool {
	return equality.Semantic.DeepEqual(orig.Spec, fresh.Spec) && equality.Semantic.DeepEqual(orig.Operation, fresh.Operation) &&
		equality.Semantic.DeepEqual(orig.Status, fresh.Status) && equality.Semantic.DeepEqual(orig.Finalizers, fresh.Finalizers) &&
		orig.DeletionTimestamp.Equal(fresh.DeletionTimestamp)
}

// withResourceVersion adds metadata.resourceVersion to a merge patch, so
// that it applies to that version only.
func withResourceVersion(data []byte, rv string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["resourceVersion"] = rv
	m["metadata"] = md
	return json.Marshal(m)
}

// event records a Kubernetes Event on app and posts it to
// notification-controller (pkg/events).
func (r *ApplicationReconciler) event(app *argov1.Application, eventType, reason, message string) {
	if r.Events == nil {
		return
	}
	meta := map[string]string{}
	if rev := app.Status.Sync.Revision; rev != "" {
		meta["revision"] = rev
	}
	emit := func() { r.Events.Event(app, eventType, reason, message, meta) }
	if !r.held.keep(app.Namespace+"/"+app.Name, emit) {
		emit()
	}
}

// setPendingDiff writes the pending diff annotation (appdiff.Annotation),
// removing it when nothing differs.
func setPendingDiff(app *argov1.Application, diff string) {
	if diff == "" {
		delete(app.Annotations, appdiff.Annotation)
		return
	}
	if app.Annotations == nil {
		app.Annotations = map[string]string{}
	}
	app.Annotations[appdiff.Annotation] = diff
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// conditionEvents records each condition of app that orig did not have
// (by type and message) as a Warning event whose reason is the
// condition's type: bad input gets a condition and an event.
func (r *ApplicationReconciler) conditionEvents(orig, app *argov1.Application) {
	before := map[string]string{}
	for _, c := range orig.Status.Conditions {
		before[c.Type] = c.Message
	}
	for _, c := range app.Status.Conditions {
		if msg, ok := before[c.Type]; !ok || msg != c.Message {
			r.event(app, corev1.EventTypeWarning, c.Type, c.Message)
		}
	}
}
