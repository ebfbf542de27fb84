package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// maxCauses is how many objects the aggregated health message names.
const maxCauses = 3

// Item is one object of an Application for aggregation.
type Item struct {
	Group, Kind, Namespace, Name string
	Live                         *unstructured.Unstructured // nil: missing from the cluster
	Hook                         bool                       // hooks are skipped
	Ignore                       bool                       // argocd.argoproj.io/ignore-healthcheck: "true", or the app itself
}

// isChildApp reports whether the item is an Argo CD Application.
func (it Item) isChildApp() bool {
	return it.Group == v1alpha1.GroupVersion.Group && it.Kind == "Application"
}

// ResourceHealth is the health Argo CD writes for the item in
// status.resources[].health: Missing when it is absent from the cluster,
// its health by Of otherwise; nil for hooks, ignored objects and kinds
// without a rule (argocd-contract §6.2).
func ResourceHealth(it Item) *v1alpha1.HealthStatus {
	if it.Hook || it.Ignore {
		return nil
	}
	if it.Live == nil {
		return &v1alpha1.HealthStatus{Status: v1alpha1.HealthMissing}
	}
	st, ok := Of(it.Live)
	if !ok {
		return nil
	}
	return &st
}

// Aggregate is the Application's health (argocd-contract §6.2, Argo CD's
// controller/health.go): the worst of its objects' health in the order
// Healthy < Suspended < Progressing < Missing < Degraded < Unknown,
// starting from Healthy. Hooks are skipped; ignored objects and kinds
// without a rule do not count; missing objects do not count (OutOfSync
// already says so) except that when objects are expected and none exists
// the health is Missing; a Missing or Unknown child Application does not
// count. The message names the objects with the worst health, up to three,
// as "Caused by <group>/<Kind>:<namespace>/<name>, … and N more" (group
// and namespace left out when empty); none when Healthy or all missing.
// LastTransitionTime is left for the caller, who knows the previous health.
func Aggregate(items []Item) v1alpha1.AppHealthStatus {
	worst := v1alpha1.HealthHealthy
	var causes []Item
	var expected, anyLive bool
	for _, it := range items {
		if it.Hook {
			continue
		}
		expected = true
		if it.Live != nil {
			anyLive = true
		}
		st := ResourceHealth(it)
		if st == nil || it.Live == nil {
			continue
		}
		// Application has no built-in rule; this keeps Argo CD's guard for
		// when one is added (its documented opt-in script).
		if it.isChildApp() && (st.Status == v1alpha1.HealthMissing || st.Status == v1alpha1.HealthUnknown) {
			continue
		}
		switch {
		case Worse(st.Status, worst):
			worst, causes = st.Status, []Item{it}
		case st.Status == worst && worst != v1alpha1.HealthHealthy:
			causes = append(causes, it)
		}
	}
	if expected && !anyLive && Worse(v1alpha1.HealthMissing, worst) {
		return v1alpha1.AppHealthStatus{Status: v1alpha1.HealthMissing}
	}
	return v1alpha1.AppHealthStatus{Status: worst, Message: causedBy(causes)}
}

// causedBy words the causes as Argo CD does; "" when there are none.
func causedBy(causes []Item) string {
	if len(causes) == 0 {
		return ""
	}
	parts := make([]string, 0, maxCauses)
	for _, c := range causes[:min(len(causes), maxCauses)] {
		gk, name := c.Kind, c.Name
		if c.Group != "" {
			gk = c.Group + "/" + c.Kind
		}
		if c.Namespace != "" {
			name = c.Namespace + "/" + c.Name
		}
		parts = append(parts, gk+":"+name)
	}
	msg := "Caused by " + strings.Join(parts, ", ")
	if n := len(causes) - maxCauses; n > 0 {
		msg += fmt.Sprintf(" and %d more", n)
	}
	return msg
}

// HookPhase maps a hook's health to Argo CD's hook operation phase
// (v1alpha1.Operation*, argocd-contract §4.2 point 3): Healthy ⇒
// Succeeded, Degraded or Unknown ⇒ Failed, Progressing or Suspended ⇒
// Running, a kind without a rule ⇒ Succeeded as soon as it exists.
func HookPhase(u *unstructured.Unstructured) string {
	phase, _ := HookStatus(u)
	return phase
}

// HookStatus is HookPhase with the message Argo CD records for the hook:
// the health message, or "<name> created" for a kind without a rule.
func HookStatus(u *unstructured.Unstructured) (phase, message string) {
	st, ok := Of(u)
	if !ok {
		return v1alpha1.OperationSucceeded, u.GetName() + " created"
	}
	switch st.Status {
	case v1alpha1.HealthDegraded, v1alpha1.HealthUnknown:
		return v1alpha1.OperationFailed, st.Message
	case v1alpha1.HealthProgressing, v1alpha1.HealthSuspended:
		return v1alpha1.OperationRunning, st.Message
	}
	return v1alpha1.OperationSucceeded, st.Message
}
